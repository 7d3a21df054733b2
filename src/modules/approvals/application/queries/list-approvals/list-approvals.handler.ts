import { IQueryHandler, QueryBus, QueryHandler } from '@nestjs/cqrs';
import { GetRunOwnerQuery } from '../../../../events/application/get-run-owner.query';
import { ApprovalRepository } from '../../../domain/approval.repository';
import { ListApprovalsQuery } from './list-approvals.query';

@QueryHandler(ListApprovalsQuery)
export class ListApprovalsHandler implements IQueryHandler<ListApprovalsQuery> {
  constructor(
    private readonly approvals: ApprovalRepository,
    private readonly queries: QueryBus,
  ) {}

  async execute({ principal, runId, page }: ListApprovalsQuery) {
    // The run's 404 (missing or not the caller's) comes first.
    await this.queries.execute(new GetRunOwnerQuery(principal, runId));
    const { items, hasMore } = await this.approvals.listByRun(runId, page);
    return { items: items.map((a) => a.snapshot()), hasMore };
  }
}
