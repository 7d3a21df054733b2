import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { SessionRepository } from '../../../domain/session.repository';
import { ListSessionsQuery } from './list-sessions.query';

@QueryHandler(ListSessionsQuery)
export class ListSessionsHandler implements IQueryHandler<ListSessionsQuery> {
  constructor(private readonly repo: SessionRepository) {}

  async execute({ principal, page, filter }: ListSessionsQuery) {
    const { items, hasMore } = await this.repo.list(principal, page, filter);
    const workStatuses = await this.repo.workStatuses(items.map((s) => s.id));
    return { items: items.map((s) => s.snapshot()), hasMore, workStatuses };
  }
}
