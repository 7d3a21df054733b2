import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { MessageRepository } from '../../../domain/message.repository';
import { SessionRepository } from '../../../domain/session.repository';
import { loadOwnedSession } from '../../load-owned-session';
import { ListMessagesQuery } from './list-messages.query';

@QueryHandler(ListMessagesQuery)
export class ListMessagesHandler implements IQueryHandler<ListMessagesQuery> {
  constructor(
    private readonly sessions: SessionRepository,
    private readonly messages: MessageRepository,
  ) {}

  async execute({ principal, sessionId, page, filter }: ListMessagesQuery) {
    await loadOwnedSession(this.sessions, principal, sessionId);
    return this.messages.list(sessionId, page, filter);
  }
}
