import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { Principal } from '../../../../common/auth/principal';
import { normalizeAmount } from '../../domain/money';
import { SpendLimit, SpendWindow } from '../../domain/spend';
import { SpendRepository } from '../../domain/spend.repository';
import { SpendService } from '../spend.service';

export class PutSpendLimitCommand {
  constructor(
    readonly principal: Principal,
    readonly amount: string,
    readonly window: SpendWindow,
  ) {}
}

export class DeleteSpendLimitCommand {
  constructor(readonly principal: Principal) {}
}

@CommandHandler(PutSpendLimitCommand)
export class PutSpendLimitHandler implements ICommandHandler<PutSpendLimitCommand> {
  constructor(
    private readonly repo: SpendRepository,
    private readonly spend: SpendService,
  ) {}

  async execute(cmd: PutSpendLimitCommand): Promise<SpendLimit> {
    const limit = await this.repo.putLimit(cmd.principal.tenantId, normalizeAmount(cmd.amount), cmd.window);
    this.spend.forget(cmd.principal.tenantId);
    return limit;
  }
}

@CommandHandler(DeleteSpendLimitCommand)
export class DeleteSpendLimitHandler implements ICommandHandler<DeleteSpendLimitCommand> {
  constructor(
    private readonly repo: SpendRepository,
    private readonly spend: SpendService,
  ) {}

  async execute(cmd: DeleteSpendLimitCommand): Promise<boolean> {
    const deleted = await this.repo.deleteLimit(cmd.principal.tenantId);
    this.spend.forget(cmd.principal.tenantId);
    return deleted;
  }
}
