import { SortOrder } from '../../../common/http/pagination';
import { SqlCte } from '../../../common/database/sql';
import { MessageProps, MessageStatus, MessageWrite, NewMessage, SessionRowChange } from './message';
import type { BatchWrite } from '../../../common/database/unit-of-work';
import { ContentPart } from '../../agents/domain/model-provider';

/** Options of `MessageRepository.appendWrite`. */
export interface AppendWriteOptions {
  expectedRevision?: number;
  now: Date;
  /** More changes to the session row (one statement cannot update it twice). */
  session?: SessionRowChange;
  /** An archived session takes no message: 409 `session_archived` (a run's input). */
  refuseArchived?: boolean;
}

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
   * `append` as a write (`UnitOfWork.write`) that may share its statement with others, with
   * `session`'s changes to the session row; it fails (and with it the statement) as `append`
   * does, or when `session.where` does not hold.
   */
  abstract appendWrite(message: NewMessage, options: AppendWriteOptions): BatchWrite;
  /** A steered message taken over by another run than the one it was steered to (CONTRACT section 7: its `run_id` names the run that took it). */
  abstract reassign(id: string, runId: string): Promise<void>;
  abstract update(id: string, changes: { status?: MessageStatus; content?: ContentPart[] }): Promise<void>;
  /**
   * `write` as CTEs of another statement that defines a CTE named `guard` (a run's versioned
   * UPDATE): they write only when `guard` returns a row. An append takes the session's next slot
   * (row lock on the session: the statement must have locked it before its `guard`, see
   * RunRepository.save) and bumps its revision, as `append` does, with `session`'s assignments
   * to that row (its condition is not used here: the guard decides).
   */
  abstract guardedWrite(write: MessageWrite, session?: SessionRowChange): SqlCte;
  abstract findById(id: string): Promise<MessageProps | null>;
  /** One keyset page by `sequence` after the message `after` (of this session, else `invalid_cursor`), optionally of one run only. */
  abstract list(sessionId: string, page: { after?: string; limit: number; order: SortOrder }, filter?: MessageFilter): Promise<{ items: MessageProps[]; hasMore: boolean }>;
  /** The whole history of a session in order (model context). */
  abstract history(sessionId: string): Promise<MessageProps[]>;
}
