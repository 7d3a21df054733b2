import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { SessionRepository } from '../../../domain/session.repository';
import { loadOwnedSession } from '../../load-owned-session';
import { ListSubagentsQuery } from './list-subagents.query';

@QueryHandler(ListSubagentsQuery)
export class ListSubagentsHandler implements IQueryHandler<ListSubagentsQuery> {
  constructor(private readonly repo: SessionRepository) {}

  async execute({ principal, sessionId, page }: ListSubagentsQuery) {
    const parent = await loadOwnedSession(this.repo, principal, sessionId);
    // A member sees only their own children (a child belongs to its parent run's owner).
    const { items, hasMore } = await this.repo.children(principal, parent.id, page);
    return { items: items.map((c) => c.snapshot()), hasMore };
  }
}
