import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { loadOwnedRun } from '../../../../runs/application/load-owned-run';
import { RunRepository } from '../../../../runs/domain/run.repository';
import { ApprovalRepository } from '../../../domain/approval.repository';
import { ListApprovalsQuery } from './list-approvals.query';

@QueryHandler(ListApprovalsQuery)
export class ListApprovalsHandler implements IQueryHandler<ListApprovalsQuery> {
  constructor(
    private readonly approvals: ApprovalRepository,
    private readonly runs: RunRepository,
  ) {}

  async execute({ principal, runId, page }: ListApprovalsQuery) {
    await loadOwnedRun(this.runs, principal, runId);
    const { items, hasMore } = await this.approvals.listByRun(runId, page);
    return { items: items.map((a) => a.snapshot()), hasMore };
  }
}
