import { Injectable, Logger, Optional } from '@nestjs/common';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { Metrics } from '../../../common/metrics/metrics';
import { MessageWrite } from '../../sessions/domain/message';
import { MessageRepository } from '../../sessions/domain/message.repository';
import { SessionRepository } from '../../sessions/domain/session.repository';
import { ApprovalGate } from '../domain/approval-gate';
import { Run, SteeredInput } from '../domain/run.aggregate';
import { AppConfig } from '../../../common/config/app-config';
import { newId } from '../../../common/ids/ids';
import { RunRepository } from '../domain/run.repository';
import { RunSignals } from './run-signals';

/** The reason label and log field of an ended run: its termination reason or its error code. */
export function endReasonOf(run: Run): string | null {
  const p = run.propsForPersistence();
  return p.terminationReason ?? p.error?.code ?? null;
}

/**
 * Saves a run (row + events) and keeps the session's `active_run_id` / `last_active_at` true in
 * the same transaction; after commit, wakes the worker when a run ended and its session has
 * another run waiting (that one may start now). Every start and end of a run is committed here:
 * after commit it is logged (info) and counted (Metrics).
 */
@Injectable()
export class RunPersistence {
  private readonly logger = new Logger('Runs');

  constructor(
    private readonly uow: UnitOfWork,
    private readonly runs: RunRepository,
    private readonly sessions: SessionRepository,
    private readonly messages: MessageRepository,
    private readonly signals: RunSignals,
    private readonly config: AppConfig,
    @Optional() private readonly approvals?: ApprovalGate,
    @Optional() private readonly metrics?: Metrics,
  ) {}

  /** Saves `run`; `inTx` runs first in the same transaction. */
  async save(run: Run, inTx?: () => Promise<void>): Promise<void> {
    await this.write(run, inTx, undefined);
  }

  /**
   * Saves `run` (which must have changes) together with a message write. While the run goes on,
   * that is ONE statement (the message write rides on the run's versioned UPDATE, so neither
   * lands without the other) and no transaction: 1 round trip instead of BEGIN + 2 + COMMIT (B1
   * profile: the executor's saves were 16 of a run's ~50 statements).
   */
  async saveWithMessage(run: Run, message: MessageWrite): Promise<void> {
    await this.write(run, undefined, message);
  }

  /** Queued runs (as of their steer) for the inputs an ended run left; each message then names its run. */
  private async startRunsFor(ended: Run, inputs: SteeredInput[]): Promise<void> {
    const p = ended.propsForPersistence();
    for (const i of inputs) {
      const run = Run.create({
        id: newId('run'),
        tenantId: p.tenantId,
        subjectId: p.subjectId,
        sessionId: p.sessionId,
        agent: p.agent,
        model: i.model,
        userMessageId: i.message_id,
        limits: i.limits,
        metadata: i.metadata,
        now: new Date(i.accepted_at),
        queueTtlMs: this.config.runQueueTtlMs,
      });
      await this.runs.insert(run);
      await this.messages.reassign(i.message_id, run.id);
    }
    await this.runs.clearInbox(ended.id);
    await this.sessions.setActiveRun(p.sessionId, await this.runs.findActiveInSession(p.sessionId), new Date());
  }

  private async write(run: Run, inTx: (() => Promise<void>) | undefined, message: MessageWrite | undefined): Promise<void> {
    let starts = false;
    let finishes = false;
    for (const e of run.unsavedEvents) {
      if (e.type === 'run.started') starts = true;
      else if (e.type === 'run.finished') finishes = true;
    }
    await this.commit(run, inTx, message);
    if (starts || finishes) this.reportCommitted(run, starts, finishes);
  }

  /** A run's start and end, once committed: one info line each and the run metrics. */
  private reportCommitted(run: Run, started: boolean, finished: boolean): void {
    const p = run.propsForPersistence();
    if (started) {
      const queuedMs = p.startedAt ? p.startedAt.getTime() - p.createdAt.getTime() : null;
      this.metrics?.recordRunStarted(p.createdAt);
      this.logger.log({ msg: 'run started', run_id: p.id, session_id: p.sessionId, agent_id: p.agent.id, model: p.model, queued_ms: queuedMs });
    }
    if (finished) {
      const finishedAt = p.finishedAt ?? new Date();
      const reason = endReasonOf(run);
      this.metrics?.recordRunFinished(p.status, reason, p.createdAt, finishedAt);
      this.logger.log({
        msg: 'run finished',
        run_id: p.id,
        session_id: p.sessionId,
        status: p.status,
        reason,
        duration_ms: finishedAt.getTime() - p.createdAt.getTime(),
        steps: p.stepCount,
      });
    }
  }

  private async commit(run: Run, inTx: (() => Promise<void>) | undefined, message: MessageWrite | undefined): Promise<void> {
    const endedNow = run.isTerminal;
    // An ending run moves the session to its next active run in its save statement (the session is
    // locked by an earlier statement of the transaction below, so that statement's snapshot is
    // recent enough). The message write rides on the same statement.
    const settleAt = endedNow && run.hasChanges ? new Date() : undefined;
    if (!endedNow && !inTx) {
      // One statement: no transaction needed.
      await this.runs.save(run, { message });
      return;
    }
    await this.uow.run(async () => {
      // Lock order everywhere: session row, then run row, then event counters.
      const others = endedNow ? await this.runs.lockSessionOf(run) : null;
      const taken = [...run.takenInputs];
      if (inTx) await inTx();
      await this.runs.save(run, { message, settleSession: settleAt });
      if (endedNow) {
        // Pending approval rows exist only while a call awaits approval (Run.endedAwaitingApproval).
        if (run.endedAwaitingApproval) await this.approvals?.closeForRun(run.id, run.status === 'expired' ? 'expired' : 'cancelled');
        if (!settleAt) {
          const next = await this.runs.findActiveInSession(run.owner.sessionId);
          await this.sessions.setActiveRun(run.owner.sessionId, next, new Date());
        }
        // Input steered to it that it did not take is never dropped: a run for each, as if enqueued.
        const leftover = (others?.inbox ?? []).filter((i) => !taken.includes(i.message_id));
        if (leftover.length > 0) await this.startRunsFor(run, leftover);
        // The session's next run may start now: wake the worker (it also polls).
        if (others?.othersActive || leftover.length > 0) this.uow.afterCommit(() => this.signals.workAvailable());
      }
    });
  }
}
