import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { SessionRepository } from '../../../domain/session.repository';
import { loadOwnedSession } from '../../load-owned-session';
import { GetSessionQuery } from './get-session.query';

@QueryHandler(GetSessionQuery)
export class GetSessionHandler implements IQueryHandler<GetSessionQuery> {
  constructor(private readonly repo: SessionRepository) {}

  async execute({ principal, sessionId }: GetSessionQuery) {
    return (await loadOwnedSession(this.repo, principal, sessionId)).snapshot();
  }
}
