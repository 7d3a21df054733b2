import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { ExistingSessionsQuery } from '../../../../events/application/stream-targets.query';
import { SessionRepository } from '../../../domain/session.repository';

@QueryHandler(ExistingSessionsQuery)
export class ExistingSessionsHandler implements IQueryHandler<ExistingSessionsQuery, string[]> {
  constructor(private readonly sessions: SessionRepository) {}

  execute({ ids }: ExistingSessionsQuery): Promise<string[]> {
    return this.sessions.existing(ids);
  }
}
