import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { loadOwnedSession } from '../../../../sessions/application/load-owned-session';
import { SessionRepository } from '../../../../sessions/domain/session.repository';
import { RunRepository } from '../../../domain/run.repository';
import { ListRunsQuery } from './list-runs.query';

@QueryHandler(ListRunsQuery)
export class ListRunsHandler implements IQueryHandler<ListRunsQuery> {
  constructor(
    private readonly runs: RunRepository,
    private readonly sessions: SessionRepository,
  ) {}

  async execute({ principal, sessionId, page }: ListRunsQuery) {
    await loadOwnedSession(this.sessions, principal, sessionId);
    const { items, hasMore } = await this.runs.listBySession(sessionId, page);
    return { items: items.map((r) => r.snapshot()), hasMore };
  }
}
