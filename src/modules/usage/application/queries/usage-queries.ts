import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { Principal } from '../../../../common/auth/principal';
import { SpendLimit, windowOf } from '../../domain/spend';
import { SpendRepository, UsageGroup, UsageRow } from '../../domain/spend.repository';

export class GetSpendLimitQuery {
  constructor(readonly principal: Principal) {}
}

export interface SpendLimitView {
  limit: SpendLimit | null;
  /** Spent in the limit's current window (null without a limit). */
  spent: string | null;
  resetsAt: Date | null;
}

@QueryHandler(GetSpendLimitQuery)
export class GetSpendLimitHandler implements IQueryHandler<GetSpendLimitQuery> {
  constructor(private readonly repo: SpendRepository) {}

  async execute({ principal }: GetSpendLimitQuery): Promise<SpendLimitView> {
    const limit = await this.repo.findLimit(principal.tenantId);
    if (!limit) return { limit: null, spent: null, resetsAt: null };
    const { start, resetsAt } = windowOf(limit.window, new Date());
    return { limit, spent: await this.repo.spentSince(principal.tenantId, start), resetsAt };
  }
}

export class GetUsageQuery {
  constructor(
    readonly principal: Principal,
    readonly from: Date,
    readonly to: Date,
    readonly groupBy: UsageGroup,
  ) {}
}

@QueryHandler(GetUsageQuery)
export class GetUsageHandler implements IQueryHandler<GetUsageQuery> {
  constructor(private readonly repo: SpendRepository) {}

  execute(q: GetUsageQuery): Promise<UsageRow[]> {
    return this.repo.usage(q.principal.tenantId, q.from, q.to, q.groupBy);
  }
}
