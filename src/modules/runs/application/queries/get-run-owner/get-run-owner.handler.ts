import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { GetRunOwnerQuery, RunOwner } from '../../../../events/application/get-run-owner.query';
import { RunRepository } from '../../../domain/run.repository';
import { loadOwnedRun } from '../../load-owned-run';

/** Answers the events module's ownership question for run streams (404 for missing or foreign runs). */
@QueryHandler(GetRunOwnerQuery)
export class GetRunOwnerHandler implements IQueryHandler<GetRunOwnerQuery, RunOwner> {
  constructor(private readonly runs: RunRepository) {}

  async execute({ principal, runId }: GetRunOwnerQuery): Promise<RunOwner> {
    const run = await loadOwnedRun(this.runs, principal, runId);
    const o = run.owner;
    return { runId: o.runId, sessionId: o.sessionId, tenantId: o.tenantId, subjectId: o.subjectId, status: run.status, finished: run.isTerminal };
  }
}
