import type { MessageWrite, NewMessage } from '../../sessions/domain/message';
import { SortOrder } from '../../../common/http/pagination';
import { Run, RunProps, SteeredInput } from './run.aggregate';

/** A run that omitted `concurrency` met an active run in a session whose default is `steer` or `interrupt`. */
export class SessionDefaultConcurrency extends Error {
  constructor(readonly mode: 'steer' | 'interrupt') {
    super(`the session's default concurrency is ${mode}`);
  }
}

/** A run as read for its public resource: its fields and its event stream's last sequence, from one read. */
export interface RunReadView {
  run: RunProps;
  lastSequence: number;
  /** Its event stream's retention mark (events with a sequence <= this were deleted); 0 when none. */
  purgedThrough: number;
}

/**
 * One step's commit, as data: with the run's own change (its row conditional on its expected
 * version, its recorded events, the steered inputs it took) the repository writes these in the
 * SAME statement, and nothing of them unless the run's versioned UPDATE matched.
 */
export interface StepCommit {
  /**
   * A message write of the step. An append takes the session's next slot, so the statement locks
   * the session row before the run row (the lock order everywhere).
   */
  message?: MessageWrite;
  /**
   * The run ends: the session's `active_run_id` moves to its next active run and
   * `last_active_at` to this time (with a message append, in that append's update of the session
   * row: one statement cannot update a row twice). The caller must hold the session row lock from
   * an EARLIER statement of its transaction: a statement that waited for it would pick the next
   * run from a snapshot older than the transaction it waited for.
   */
  settleSession?: Date;
}

/** A new run's input: its message, appended with the run in one statement (see `insertWithInput`). */
export interface RunInputCommit {
  message: NewMessage;
  expectedRevision?: number;
  now: Date;
  /** `concurrency: reject`: a session that has an active run takes neither (409 `session_busy`). */
  reject: boolean;
  /** The run omitted `concurrency`: the session's `default_concurrency` decides. */
  sessionDefault?: boolean;
}

/** Port: persistence of runs. `save` writes the row conditionally on version and appends its events, atomically. */
export abstract class RunRepository {
  /**
   * A new run with its input message, as ONE statement (`UnitOfWork.write`: inside a batch, held
   * for its closing statement): the message takes the session's next slot (the session row locked,
   * its revision checked, an archived session refused), the run's row is inserted, and the session
   * row's `active_run_id` stays on the run already active, else becomes this one, `last_active_at`
   * is `now` (read from the locked row, never an older snapshot). With `reject`, a session that
   * has an active run takes neither: 409 `session_busy`. With `sessionDefault`, the session's
   * `default_concurrency` decides: `enqueue` takes it, `reject` is 409 `session_busy`, `steer` /
   * `interrupt` fail with SessionDefaultConcurrency (the caller takes that path instead, in a
   * transaction).
   */
  abstract insertWithInput(run: Run, input: RunInputCommit): Promise<void>;
  /**
   * Conditional on `run.expectedVersion` (ConcurrencyConflict otherwise), with the recorded events
   * appended and `commit`'s writes: one statement (it joins the ambient transaction, if any).
   */
  abstract save(run: Run, commit?: StepCommit): Promise<void>;
  /**
   * Locks the session row of a run that is ending (the lock order everywhere: session, then run)
   * and answers whether another run of the session is active. That answer is read from the
   * statement's snapshot, which may predate a run committed while the lock was awaited (the
   * caller uses it only to wake the worker early; the worker polls anyway).
   */
  abstract lockSessionOf(run: Run): Promise<{ othersActive: boolean; inbox: SteeredInput[] }>;
  /** The steered inputs a run has not taken yet. */
  abstract inboxOf(runId: string): Promise<SteeredInput[]>;
  /**
   * Hands a steered input to an active run (its inbox; the run's version is unchanged). False
   * when the run is no longer active. The caller holds the session row lock.
   */
  abstract steer(runId: string, input: SteeredInput): Promise<boolean>;
  /** A new run's row alone (its input message exists already: a steered input it takes over). */
  abstract insert(run: Run): Promise<void>;
  /** Empties an ended run's inbox (what it held was handed to new runs). */
  abstract clearInbox(runId: string): Promise<void>;
  abstract findById(id: string): Promise<Run | null>;
  /** Read-only (no aggregate): the run and its last event sequence in one statement, for GET. */
  abstract findView(id: string): Promise<RunReadView | null>;
  /** The ids among `ids` that still exist. */
  abstract existing(ids: string[]): Promise<string[]>;
  /** The oldest non-terminal run of a session, if any. */
  abstract findActiveInSession(sessionId: string): Promise<string | null>;
  /** Runs of a session the caller was already checked to see. */
  abstract listBySession(
    sessionId: string,
    page: { after?: string; limit: number; order: SortOrder },
  ): Promise<{ items: Run[]; hasMore: boolean }>;
  /**
   * Claims up to `limit` runs to execute (oldest first): queued runs whose session has no earlier
   * non-terminal run (FIFO per session), and running/cancelling runs whose lease expired (crash
   * take-over). SKIP LOCKED, so nodes claiming at once never get the same run.
   */
  abstract claimBatch(nodeId: string, leaseMs: number, limit: number): Promise<Run[]>;
  /** Extends the lease if this node still holds it; returns null when the lease is lost. */
  abstract heartbeat(runId: string, nodeId: string, leaseMs: number): Promise<{ status: string; cancelRequested: boolean; inboxSize: number } | null>;
  /** Ids of queued runs past their queue TTL, and of waiting runs whose approvals expired. */
  abstract findExpiredQueued(limit: number): Promise<string[]>;
  /** Releases every lease this node holds (graceful shutdown): another node resumes the runs. */
  abstract releaseLeases(nodeId: string): Promise<number>;
}
