import type { MessageWrite, NewMessage } from '../../sessions/domain/message';
import { SortOrder } from '../../../common/http/pagination';
import { Run, RunProps, SteeredInput } from './run.aggregate';
import type { ConcurrencyMode } from './run-decider';
import type { RunStatus } from './run-status';
import type { InputReceipt } from './input-receipt';

/**
 * The idle-session insert did not apply: the session had an active run and its (default)
 * concurrency is `steer`, `interrupt` or `enqueue`, or it was busy when the statement ran and
 * idle again when its failure was read (a run ended in between). The caller decides again with
 * the session lock held (a transaction), for `mode`.
 */
export class SessionDefaultConcurrency extends Error {
  constructor(readonly mode: ConcurrencyMode) {
    super(`the session's default concurrency is ${mode}`);
  }
}

/** The session's active run waits for input (`ask_user`): the new input answers it (CONTRACT 17). */
export class SessionAwaitsInput extends Error {
  constructor(readonly runId: string) {
    super(`the session's active run ${runId} waits for input`);
  }
}

/** A waiting run whose `wake_at` came, as the due claim returns it. */
export interface DueRun {
  id: string;
  tenantId: string;
  status: RunStatus;
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
   * run from a snapshot older than the transaction it waited for (`saveEnding` instead checks
   * that nothing changed the session row after its snapshot).
   */
  settleSession?: Date;
}

/** A new run's input: its message, appended with the run in one statement (see `insertWithInput`). */
export interface RunInputCommit {
  message: NewMessage;
  expectedRevision?: number;
  now: Date;
  /**
   * `enqueue`: the caller holds the session lock and queues the run behind whatever is active.
   * Otherwise (the request's `concurrency`, absent: the session's default) the run is written only
   * when the locked session row has no active run (it starts); else neither is written and
   * `admit`'s answer for that row is the error (see `insertWithInput`).
   */
  concurrency: ConcurrencyMode | undefined;
  /** The input's receipt id (`inp_...`): its row is written by the same statement. */
  receiptId: string;
}

/** A steered input's receipt (CONTRACT section 7), written with the steer. */
export interface SteerReceipt {
  id: string;
  tenantId: string;
  subjectId: string;
  sessionId: string;
  now: Date;
}

/** Port: persistence of runs. `save` writes the row conditionally on version and appends its events, atomically. */
export abstract class RunRepository {
  /**
   * A new run with its input message, as ONE statement (`UnitOfWork.write`: inside a batch, held
   * for its closing statement): the message takes the session's next slot (the session row locked,
   * its revision checked, an archived session refused), the run's row is inserted, and the session
   * row's `active_run_id` stays on the run already active, else becomes this one, `last_active_at`
   * is `now` (read from the locked row, never an older snapshot). Unless `admit` (run-decider)
   * queues it for that row, neither is written: `reject` is 409 `session_busy`, `steer` /
   * `interrupt` fail with SessionDefaultConcurrency (the caller takes that path instead, in a
   * transaction). In any mode, an active run waiting for input (`ask_user`) is answered by the
   * input instead: SessionAwaitsInput (the caller answers it, in a transaction).
   */
  abstract insertWithInput(run: Run, input: RunInputCommit): Promise<void>;
  /**
   * Conditional on `run.expectedVersion` (ConcurrencyConflict otherwise), with the recorded events
   * appended and `commit`'s writes: one statement (it joins the ambient transaction, if any).
   */
  abstract save(run: Run, commit?: StepCommit): Promise<void>;
  /**
   * An ending run's save without a transaction (`save` with `settleSession` needs one that locked
   * the session row first): ONE statement that locks the session row, then the run row, and
   * writes only while the run holds no steered input it did not take and the session row is the
   * version the statement's snapshot sees (so the next active run it picks is not missing a run
   * committed while the lock was awaited). Answers whether another run of the session is active
   * now, or null when nothing was written because a condition did not hold (or the version did
   * not match): the caller then takes the locking way, which decides.
   */
  abstract saveEnding(run: Run, commit: { message?: MessageWrite; settleSession: Date }): Promise<{ othersActive: boolean } | null>;
  /**
   * Locks the session row, then the run row (the lock order everywhere: session, run, then
   * the rest), first in every transaction that saves a run, and answers whether another run of
   * the session is active and which steered inputs the run holds (an ending run leaves them
   * to new runs). That answer is read from the
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
  abstract steer(runId: string, input: SteeredInput, receipt: SteerReceipt): Promise<boolean>;
  /** The receipts of `messageIds` now name the follow-up run `runId` (`followed_up`). */
  abstract followUpReceipts(messageIds: readonly string[], runId: string): Promise<void>;
  /** The receipt of an input that answered the active run's `ask_user` (steered to it, taken at once). */
  abstract answerReceipt(receipt: InputReceipt): Promise<void>;
  /** The receipt of `messageId` says `rejected` (its queued run was refused before it took it). */
  abstract rejectReceipt(messageId: string): Promise<void>;
  abstract findReceipt(id: string): Promise<InputReceipt | null>;
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
  /**
   * The agent in control when the newest run of the session that started before `before` ended
   * (CONTRACT 16: a handoff carries over to the session's next run); null: no such run.
   */
  abstract lastAgentOf(sessionId: string, before: { runId: string; createdAt: Date }): Promise<{ id: string; version: string } | null>;
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
  /**
   * Claims up to `limit` waiting runs whose `wake_at` is at or before `now` (the clock's): SKIP
   * LOCKED, and their `wake_at` moves to now + leaseMs (the claim's lease: a node that dies after
   * the claim leaves the run due again then). The version is not changed: what the wake decides
   * is committed through the run's versioned save, so two nodes never both act on one wake.
   */
  abstract claimDue(now: Date, leaseMs: number, limit: number): Promise<DueRun[]>;
  /** Extends the lease if this node still holds it; returns null when the lease is lost. */
  abstract heartbeat(runId: string, nodeId: string, leaseMs: number): Promise<{ status: string; cancelRequested: boolean; inboxSize: number } | null>;
  /** Ids of queued runs past their queue TTL at `now` (the clock's). */
  abstract findExpiredQueued(limit: number, now: Date): Promise<string[]>;
  /**
   * Subagent runs still going (not `cancelling`) whose parent run was cancelled or has ended
   * (CONTRACT 16, issue 48): the cascade missed them (its after-commit signal died with its node).
   * At most `limit`.
   */
  abstract orphanedSubagentRuns(limit: number): Promise<Array<{ id: string; parentRunId: string; parentCancelled: boolean }>>;
  /** Releases every lease this node holds (graceful shutdown): another node resumes the runs. */
  abstract releaseLeases(nodeId: string): Promise<number>;
}
