import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { DomainError } from '../../../../../common/errors/domain-error';
import { MessageRepository } from '../../../domain/message.repository';
import { SessionRepository } from '../../../domain/session.repository';
import { loadOwnedSession } from '../../load-owned-session';
import { GetMessageQuery } from './get-message.query';

@QueryHandler(GetMessageQuery)
export class GetMessageHandler implements IQueryHandler<GetMessageQuery> {
  constructor(
    private readonly sessions: SessionRepository,
    private readonly messages: MessageRepository,
  ) {}

  async execute({ principal, sessionId, messageId }: GetMessageQuery) {
    await loadOwnedSession(this.sessions, principal, sessionId);
    const m = await this.messages.findById(messageId);
    if (!m || m.sessionId !== sessionId) throw new DomainError('message_not_found', 'message not found', { message_id: messageId });
    return m;
  }
}
