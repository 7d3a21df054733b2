import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { SessionRepository } from '../../../domain/session.repository';
import { SessionWorkStatusQuery } from './session-work-status.query';

@QueryHandler(SessionWorkStatusQuery)
export class SessionWorkStatusHandler implements IQueryHandler<SessionWorkStatusQuery> {
  constructor(private readonly repo: SessionRepository) {}

  execute({ sessionIds }: SessionWorkStatusQuery) {
    return this.repo.workStatuses(sessionIds);
  }
}
