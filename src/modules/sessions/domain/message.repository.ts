import { SortOrder } from '../../../common/http/pagination';
import { MessageProps, MessageStatus, NewMessage } from './message';
import { ContentPart } from '../../agents/domain/model-provider';

/**
 * Port: the session history. `append` runs inside the caller's transaction: it locks the
 * session row, takes the next `sequence`, increments the session's `revision` by one and
 * inserts the message. With `expectedRevision` a stale revision is 409 `session_conflict`.
 */
export abstract class MessageRepository {
  abstract append(message: NewMessage, options?: { expectedRevision?: number; now?: Date }): Promise<MessageProps>;
  abstract update(id: string, changes: { status?: MessageStatus; content?: ContentPart[] }): Promise<void>;
  abstract findById(id: string): Promise<MessageProps | null>;
  abstract list(sessionId: string, page: { after?: string; limit: number; order: SortOrder }): Promise<{ items: MessageProps[]; hasMore: boolean }>;
  /** The whole history of a session in order (model context). */
  abstract history(sessionId: string): Promise<MessageProps[]>;
}
