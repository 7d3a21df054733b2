import { Injectable } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { Principal } from '../../common/auth/principal';
import { ContentPart } from '../agents/domain/model-provider';
import { DomainError } from '../../common/errors/domain-error';
import { SortOrder } from '../../common/http/pagination';
import { ToolVisibilityResolver } from '../events/application/tool-visibility';
import { projectContent } from '../events/domain/event-projector';
import { GetMessageQuery } from '../sessions/application/queries/get-message/get-message.query';
import { ListMessagesQuery } from '../sessions/application/queries/list-messages/list-messages.query';
import { MessageProps } from '../sessions/domain/message';

/**
 * The session history as an adapter reads it: a message of the caller's session, and keyset
 * pages (by `sequence`, in the database) of the session's messages or of one run's, through the
 * sessions module's queries; content projected for the caller as `/v1/sessions/{id}/messages`
 * shows it (members: private tools' arguments and results redacted).
 */
@Injectable()
export class SessionHistory {
  constructor(
    private readonly queries: QueryBus,
    private readonly visibility: ToolVisibilityResolver,
  ) {}

  /** The message of the caller's session (404 `session_not_found` for the session), or null when the session has no such message. */
  async message(principal: Principal, sessionId: string, messageId: string): Promise<MessageProps | null> {
    try {
      return this.projected(principal, await this.queries.execute(new GetMessageQuery(principal, sessionId, messageId)));
    } catch (err) {
      if (err instanceof DomainError && err.code === 'message_not_found') return null;
      throw err;
    }
  }

  /** The messages after the message `after` (of this session), all of them or those of run `runId`, at most `limit`. */
  async page(principal: Principal, sessionId: string, page: { after?: string; limit: number; order: SortOrder; runId?: string }): Promise<{ items: MessageProps[]; hasMore: boolean }> {
    const { items, hasMore } = await this.queries.execute(
      new ListMessagesQuery(principal, sessionId, { after: page.after, limit: page.limit, order: page.order }, page.runId === undefined ? {} : { runId: page.runId }),
    );
    return { items: items.map((m) => this.projected(principal, m)), hasMore };
  }

  private projected(principal: Principal, m: MessageProps): MessageProps {
    return { ...m, content: projectContent(m.content, principal.role, this.visibility.lookup) as ContentPart[] };
  }
}
