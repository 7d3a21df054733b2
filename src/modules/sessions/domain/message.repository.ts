import { SortOrder } from '../../../common/http/pagination';
import { MessageProps, MessageStatus, NewMessage } from './message';
import { ContentPart } from '../../agents/domain/model-provider';

/** Which of a session's messages a list holds: all of them, or those of one run (`runId`). */
export interface MessageFilter {
  runId?: string;
}

/**
 * Port: the session history. `append` runs inside the caller's transaction: it locks the
 * session row, takes the next `sequence`, increments the session's `revision` by one and
 * inserts the message. With `expectedRevision` a stale revision is 409 `session_conflict`.
 */
export abstract class MessageRepository {
  abstract append(message: NewMessage, options?: { expectedRevision?: number; now?: Date }): Promise<MessageProps>;
  /**
   * `append` of a run's input with its checks, as ONE statement (`UnitOfWork.write`: held for the
   * closing statement inside a batch, under a savepoint in a transaction): an archived session
   * takes no message (409 `session_archived`), a stale `expectedRevision` is 409 `session_conflict`.
   */
  abstract appendInput(message: NewMessage, options: { expectedRevision?: number; now: Date }): Promise<void>;
  /** A steered message taken over by another run than the one it was steered to (CONTRACT section 7: its `run_id` names the run that took it). */
  abstract reassignAll(ids: readonly string[], runId: string): Promise<void>;
  abstract update(id: string, changes: { status?: MessageStatus; content?: ContentPart[] }): Promise<void>;
  abstract findById(id: string): Promise<MessageProps | null>;
  /** One keyset page by `sequence` after the message `after` (of this session, else `invalid_cursor`), optionally of one run only. */
  abstract list(sessionId: string, page: { after?: string; limit: number; order: SortOrder }, filter?: MessageFilter): Promise<{ items: MessageProps[]; hasMore: boolean }>;
  /** The whole history of a session in order (model context). */
  abstract history(sessionId: string): Promise<MessageProps[]>;
}
