import { IQueryHandler, QueryBus, QueryHandler } from '@nestjs/cqrs';
import { GetRunOwnerQuery } from '../../../../events/application/get-run-owner.query';
import { SubagentSessionIdsQuery } from '../../../../sessions/application/queries/subagent-session-ids/subagent-session-ids.query';
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
    const run = await this.queries.execute(new GetRunOwnerQuery(principal, runId));
    // Approvals inside the run's subagents are listed too (CONTRACT 16), as far as the caller sees them.
    const children = await this.queries.execute(new SubagentSessionIdsQuery(principal, run.sessionId, runId));
    const { items, hasMore } = await this.approvals.listByRun(runId, children, page);
    return { items: items.map((a) => a.snapshot()), hasMore };
  }
}
