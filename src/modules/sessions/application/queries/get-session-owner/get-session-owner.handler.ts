import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { GetSessionOwnerQuery, SessionOwner } from '../../../../events/application/get-session-owner.query';
import { SessionRepository } from '../../../domain/session.repository';
import { loadOwnedSession } from '../../load-owned-session';

@QueryHandler(GetSessionOwnerQuery)
export class GetSessionOwnerHandler implements IQueryHandler<GetSessionOwnerQuery, SessionOwner> {
  constructor(private readonly repo: SessionRepository) {}

  async execute({ principal, sessionId }: GetSessionOwnerQuery): Promise<SessionOwner> {
    const session = await loadOwnedSession(this.repo, principal, sessionId);
    return { sessionId: session.id, tenantId: session.tenantId, subjectId: session.subjectId };
  }
}
