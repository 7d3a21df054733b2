import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { SessionRepository } from '../../../domain/session.repository';
import { SubagentSessionIdsQuery } from './subagent-session-ids.query';

/** Far more than a run can create (max_concurrent bounds the active ones, not the total): a bound, not a page. */
const MAX_SUBAGENT_SESSIONS = 1000;

@QueryHandler(SubagentSessionIdsQuery)
export class SubagentSessionIdsHandler implements IQueryHandler<SubagentSessionIdsQuery> {
  constructor(private readonly repo: SessionRepository) {}

  execute({ principal, sessionId, runId }: SubagentSessionIdsQuery): Promise<string[]> {
    return this.repo.subagentSessionIds(principal, sessionId, runId, MAX_SUBAGENT_SESSIONS);
  }
}
