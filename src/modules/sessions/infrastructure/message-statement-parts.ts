import { GuardedRider, StatementPart, StatementParams } from '../../../common/database/statement';
import type { BatchWrite } from '../../../common/database/unit-of-work';
import { MessageWrite, NewMessage } from '../domain/message';

/**
 * More changes to the session row that a message append updates anyway (one statement cannot
 * update a row twice), rendered by the module that decides them (the runs module: the session's
 * active run): assignments `set` and a condition `where` on the locked row, with parameters from
 * the statement's numbering. `fail` explains an append whose `where` did not hold (null: not
 * this condition).
 */
export interface SessionRowChange {
  render(params: StatementParams): { set: string; where?: string };
  fail?(): Promise<Error | null>;
}

/** Options of `MessageStatementParts.appendWrite`. */
export interface AppendPartOptions {
  expectedRevision?: number;
  now: Date;
  /** More changes to the session row (one statement cannot update it twice). */
  session?: SessionRowChange;
  /** An archived session takes no message: 409 `session_archived` (a run's input). */
  refuseArchived?: boolean;
}

/**
 * Port (infrastructure level): the sessions module's parts of a statement that another module's
 * repository assembles (a run's insert or save). Methods take values and give opaque parts whose
 * parameters the statement numbers (common/database/statement.ts); the SQL of `messages` and
 * `sessions` stays in this module.
 */
export abstract class MessageStatementParts {
  /**
   * `MessageRepository.append` as a write (`UnitOfWork.write`) that may share its statement with
   * others, with `session`'s changes to the session row; it fails (and with it the statement)
   * as `append` does, or when `session`'s `where` does not hold.
   */
  abstract appendWrite(message: NewMessage, options: AppendPartOptions): BatchWrite;
  /**
   * A message write riding on a guarded statement: it writes only when the guard returned a
   * row. An append takes the session's next slot (row lock on the session: the statement must
   * have locked it before its guard, see RunRepository.save) and bumps its revision, as `append`
   * does, with `session`'s assignments to that row (its condition is not used: the guard decides).
   */
  abstract afterGuard(write: MessageWrite, session?: SessionRowChange): GuardedRider;
  /** `session`'s assignments to the session row alone (no message), riding on a guarded statement. */
  abstract sessionAfterGuard(sessionId: string, session: SessionRowChange): GuardedRider;
  /** A subquery: the session's `active_run_id` as `sessionAfterGuard`'s update left it (no row: it did not update). */
  abstract activeRunAfterSessionChange(): string;
  /**
   * A condition (SQL) for an assignment of `session`'s change to the session row: true when the
   * row being updated is the version the statement's snapshot sees, false when a transaction
   * committed a newer one after the snapshot was taken (the update then sees the newer version,
   * but the statement's subqueries do not).
   */
  abstract sessionRowAsOfSnapshot(sessionId: string): StatementPart;
  /**
   * A condition (SQL) that locks the session row before the rest of its statement runs (true
   * when the row exists): for a statement of another module that must hold the session before
   * it locks its own rows (the lock order everywhere: session, then run). Uncorrelated, so
   * PostgreSQL evaluates it once, first (an InitPlan gating the scan). `FOR NO KEY UPDATE`, the
   * lock an UPDATE of the row's non-key columns takes, never `FOR UPDATE`: that one also blocks
   * the `FOR KEY SHARE` of every foreign-key check on the row (each `run_events` and `messages`
   * INSERT checks `sessions`), so a run's save holding its run row waited for a steer holding
   * the session row and waiting for that run row: a deadlock.
   */
  abstract sessionLocked(sessionId: string): StatementPart;
  /**
   * For a CTE after `appendWrite`'s in the same statement: a SELECT of one row, `active_run_id`,
   * the session's active run as the append left it (none when the append took no slot).
   */
  abstract activeRunAfterAppend(): string;
}
