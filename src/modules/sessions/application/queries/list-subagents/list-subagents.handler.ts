import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { canSee } from '../../../../../common/auth/principal';
import { SessionRepository } from '../../../domain/session.repository';
import { loadOwnedSession } from '../../load-owned-session';
import { ListSubagentsQuery } from './list-subagents.query';

@QueryHandler(ListSubagentsQuery)
export class ListSubagentsHandler implements IQueryHandler<ListSubagentsQuery> {
  constructor(private readonly repo: SessionRepository) {}

  async execute({ principal, sessionId }: ListSubagentsQuery) {
    const parent = await loadOwnedSession(this.repo, principal, sessionId);
    // A member sees only their own children (a child belongs to its parent run's owner).
    const children = await this.repo.children(parent.tenantId, parent.id);
    return children.filter((c) => canSee(principal, c)).map((c) => c.snapshot());
  }
}
