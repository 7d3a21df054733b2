import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { GetRunOwnerQuery, RunOwner } from '../../../../events/application/get-run-owner.query';
import { isTerminal } from '../../../domain/run-status';
import { RunRepository } from '../../../domain/run.repository';
import { loadOwnedRunView } from '../../load-owned-run';

/**
 * Answers the events module's ownership question for run streams (404 for missing or foreign
 * runs), with the stream's counters from the same read: one round trip, no aggregate restore.
 */
@QueryHandler(GetRunOwnerQuery)
export class GetRunOwnerHandler implements IQueryHandler<GetRunOwnerQuery, RunOwner> {
  constructor(private readonly runs: RunRepository) {}

  async execute({ principal, runId }: GetRunOwnerQuery): Promise<RunOwner> {
    const view = await loadOwnedRunView(this.runs, principal, runId);
    const r = view.run;
    return {
      runId: r.id,
      sessionId: r.sessionId,
      tenantId: r.tenantId,
      subjectId: r.subjectId,
      status: r.status,
      finished: isTerminal(r.status),
      stream: { lastSequence: view.lastSequence, purgedThrough: view.purgedThrough },
    };
  }
}
