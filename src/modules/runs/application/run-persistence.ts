import { Injectable, Logger, Optional } from '@nestjs/common';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { Metrics } from '../../../common/metrics/metrics';
import { MessageWrite } from '../../sessions/domain/message';
import { MessageRepository } from '../../sessions/domain/message.repository';
import { SessionRepository } from '../../sessions/domain/session.repository';
import { ApprovalsPort } from './approvals-port';
import { Run, SteeredInput } from '../domain/run.aggregate';
import { decide, DecideEnv, FollowUpRun, SubagentApproval } from '../domain/run-decider';
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
 * The commit of a run's end found input steered to it that it had not taken, and the decider says
 * the run takes it in another turn (`take_leftovers`): nothing was committed (the transaction
 * rolled back); the executor retracts the end and decides the turn again with `inputs`.
 */
export class LeftoversArrived extends Error {
  constructor(readonly inputs: SteeredInput[]) {
    super('input arrived as the run was ending');
  }
}

/** The `approval.requested` events of a run's unsaved changes, as its parent is told of them (CONTRACT 16). */
function approvalsToRelay(run: Run): SubagentApproval[] {
  return run.unsavedEvents.flatMap((e) => {
    if (e.type !== 'approval.requested') return [];
    const d = e.data as Record<string, unknown>;
    return [
      {
        approval_id: String(d.approval_id),
        run_id: typeof d.run_id === 'string' ? d.run_id : run.id,
        tool_call_id: String(d.tool_call_id),
        tool_name: String(d.tool_name),
        arguments: d.arguments,
        risk: String(d.risk),
        expires_at: Date.parse(String(d.expires_at)),
      },
    ];
  });
}

/** A rule over an ended run reads neither the clock nor tools and makes no ids. */
const NO_ENV: DecideEnv = {
  now: 0,
  newId: () => {
    throw new Error('an ended run makes no ids');
  },
  tool: () => null,
};

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
    private readonly approvals: ApprovalsPort,
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

  /**
   * Carries out the decider's follow-up of an ended run's leftover input: ONE queued run (as of
   * its first input's steer, with that input's configuration) whose user message is the first
   * input and whose inbox is the rest, in commit order; all their messages name it. The ended
   * run's inbox is emptied.
   */
  private async queueFollowUp(ended: Run, { first, rest }: FollowUpRun): Promise<void> {
    const p = ended.propsForPersistence();
    const run = Run.create({
      id: newId('run'),
      tenantId: p.tenantId,
      subjectId: p.subjectId,
      sessionId: p.sessionId,
      agent: p.agent,
      model: first.model,
      userMessageId: first.message_id,
      limits: first.limits,
      metadata: first.metadata,
      // Queued as of its first input's acceptance (ahead of runs enqueued after that input), but
      // never before the run it follows: an acceptance time is read before the session lock, so
      // it may be older than that run's own creation (FIFO is by (created_at, id)).
      now: new Date(Math.max(Date.parse(first.accepted_at), p.createdAt.getTime())),
      queueTtlMs: this.config.runQueueTtlMs,
      inbox: rest,
    });
    await this.runs.insert(run);
    const ids = [first, ...rest].map((i) => i.message_id);
    await this.messages.reassignAll(ids, run.id);
    // Their receipts now name the run that takes them (CONTRACT section 7).
    await this.runs.followUpReceipts(ids, run.id);
    await this.runs.clearInbox(ended.id);
    await this.sessions.setActiveRun(p.sessionId, await this.runs.findActiveInSession(p.sessionId), new Date());
  }

  /** The decider's `reject_inputs`: receipts `rejected`, the ended run's inbox emptied. */
  private async rejectInputs(ended: Run, inputs: readonly SteeredInput[]): Promise<void> {
    for (const i of inputs) await this.runs.rejectReceipt(i.message_id);
    await this.runs.clearInbox(ended.id);
  }

  private async write(run: Run, inTx: (() => Promise<void>) | undefined, message: MessageWrite | undefined): Promise<void> {
    let starts = false;
    let finishes = false;
    for (const e of run.unsavedEvents) {
      if (e.type === 'run.started') starts = true;
      else if (e.type === 'run.finished') finishes = true;
    }
    // Subagents (CONTRACT 16): what the commit decided for parent and children, carried out after it.
    const cancels = run.unsavedSubagentCancels.length > 0 ? run.unsavedSubagentCancels.map((c) => ({ ...c })) : null;
    const closes = run.unsavedSubagentCloses.length > 0 ? [...run.unsavedSubagentCloses] : null;
    const childStarts = run.unsavedSubagentStarts.length > 0 ? run.unsavedSubagentStarts.map((c) => ({ ...c })) : null;
    const parentRef = run.propsForPersistence().state.parent;
    const parent = finishes ? parentRef : undefined;
    // Approvals asked in this run (or shown on it from a subagent below): its parent shows them too.
    const approvals = parentRef ? approvalsToRelay(run) : [];
    await this.commit(run, inTx, message);
    if (starts || finishes) this.reportCommitted(run, starts, finishes);
    if (cancels) this.uow.afterCommit(() => this.signals.subagentRunsToCancel(cancels, `run:${run.id}`));
    if (closes) this.uow.afterCommit(() => this.signals.subagentsClosed(run.owner.tenantId, closes));
    if (childStarts) this.uow.afterCommit(() => this.signals.subagentRunsStarted(run.id, childStarts));
    if (parent) this.uow.afterCommit(() => this.signals.subagentRunEnded({ id: run.id, parent: { ...parent } }));
    if (parentRef) for (const a of approvals) this.uow.afterCommit(() => this.signals.subagentApprovalRequested({ ...parentRef }, a));
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
    if (settleAt && !inTx && !run.endedAwaitingApproval && !this.uow.inContext) {
      // The usual end (no input left in its inbox, no approval to close): one statement, no
      // transaction - 3 round trips fewer than the locking way below, which it falls back to
      // (from scratch: nothing was written) when a steer arrived or the session row changed.
      const ended = await this.runs.saveEnding(run, { message, settleSession: settleAt });
      if (ended) {
        // The session's next run may start now: wake the worker (it also polls).
        if (ended.othersActive) this.uow.afterCommit(() => this.signals.workAvailable());
        return;
      }
    }
    await this.uow.run(async () => {
      // Lock order everywhere: session row, then run row, then the rest (approvals, messages,
      // event counters). Taken first, before `inTx`, which may lock an approval row (decide,
      // open) or the session row (a tool output's message append): otherwise a decision holding
      // its approval would wait for the run row held by a cancel waiting for that approval.
      const others = await this.runs.lockSessionOf(run);
      // Input steered to an ending run that it did not take: the decider says what becomes of it.
      const taken = run.takenInputs;
      const leftover = endedNow ? others.inbox.filter((i) => !taken.includes(i.message_id)) : [];
      const next = endedNow ? decide(run.propsForPersistence(), { type: 'leftover_inputs', inputs: leftover }, NO_ENV).effect : null;
      // Before anything is written (the transaction rolls back): the run does not end, it takes them.
      if (next?.type === 'take_leftovers') throw new LeftoversArrived(next.inputs);
      if (inTx) await inTx();
      await this.runs.save(run, { message, settleSession: settleAt });
      if (endedNow) {
        // Pending approval rows exist only while a call awaits approval (Run.endedAwaitingApproval).
        if (run.endedAwaitingApproval) await this.approvals.gate?.closeForRun(run.id, run.status === 'expired' ? 'expired' : 'cancelled');
        if (!settleAt) {
          const active = await this.runs.findActiveInSession(run.owner.sessionId);
          await this.sessions.setActiveRun(run.owner.sessionId, active, new Date());
        }
        if (next?.type === 'queue_follow_up') await this.queueFollowUp(run, next.run);
        if (next?.type === 'reject_inputs') await this.rejectInputs(run, next.inputs);
        // The session's next run may start now: wake the worker (it also polls).
        if (others.othersActive || next?.type === 'queue_follow_up') this.uow.afterCommit(() => this.signals.workAvailable());
      }
    });
  }
}
