import { Optional } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { Clock } from '../../../../../common/clock/clock';
import { AppConfig } from '../../../../../common/config/app-config';
import { UnitOfWork } from '../../../../../common/database/unit-of-work';
import { DomainError } from '../../../../../common/errors/domain-error';
import { newId } from '../../../../../common/ids/ids';
import { AgentCatalog } from '../../../../agents/domain/agent-definition';
import { unknownModel } from '../../../../agents/domain/model-provider';
import { AttachmentReferenceCheck } from '../../../domain/attachment-reference-check';
import { MessageRepository } from '../../../../sessions/domain/message.repository';
import { KnownSessions } from '../../../../sessions/application/known-sessions';
import { DEFAULT_LIMITS, Run, RunLimits, SteeredInput } from '../../../domain/run.aggregate';
import { normalizeAmount } from '../../../../usage/domain/money';
import { RunRepository, SessionAwaitsInput, SessionDefaultConcurrency } from '../../../domain/run.repository';
import { ApplyToRun } from '../../apply-to-run';
import { admit, ConcurrencyMode } from '../../../domain/run-decider';
import { RunSignals } from '../../run-signals';
import { appendToolResults } from '../../tool-result-messages';
import { SpendGate } from '../../../../usage/domain/spend';
import { CreateRunCommand, CreateRunInput, CreateRunResult, InputDisposition, InputReceipt } from './create-run.command';
import { Principal } from '../../../../../common/auth/principal';
import { SessionFacts } from '../../../../sessions/application/known-sessions';
import { SessionRepository } from '../../../../sessions/domain/session.repository';

/**
 * Commits the user message and the queued run in ONE statement (the session row is locked by
 * the message append, which serialises concurrent creates on a session). Never executes the
 * run: the worker does, after commit.
 */
@CommandHandler(CreateRunCommand)
export class CreateRunHandler implements ICommandHandler<CreateRunCommand> {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly known: KnownSessions,
    private readonly messages: MessageRepository,
    private readonly runs: RunRepository,
    private readonly agents: AgentCatalog,
    private readonly config: AppConfig,
    private readonly signals: RunSignals,
    private readonly sessions: SessionRepository,
    private readonly path: ApplyToRun,
    private readonly clock: Clock,
    @Optional() private readonly attachments?: AttachmentReferenceCheck,
    @Optional() private readonly spend?: SpendGate,
  ) {}

  async execute({ principal, sessionId, input }: CreateRunCommand) {
    // The session's owner and pinned agent, remembered when this node created or read it (no
    // read then); whether it still exists, is not archived and is at the expected revision is
    // checked by the statement below, which locks its row.
    const { facts: session, loaded } = await this.known.owned(principal, sessionId);
    loaded?.assertAcceptsRuns();
    const model = input.model ?? session.agent.model;
    if (input.model !== undefined && !this.agents.knownModels().includes(input.model)) throw unknownModel(input.model);
    // Over the tenant's spend limit: no new work on any surface (429 quota_exceeded, CONTRACT 18).
    await this.spend?.assertWithinLimit(session.tenantId);
    const refs = input.content.filter((p) => p.type === 'attachment_ref').map((p) => (p as { attachment_id: string }).attachment_id);
    if (refs.length > 0) {
      if (!this.attachments) throw new DomainError('attachment_not_found', 'attachments are not available', { attachment_id: refs[0] });
      await this.attachments.assertUsable({ tenantId: session.tenantId, subjectId: session.subjectId }, refs);
    }
    const limits = { ...DEFAULT_LIMITS, ...stripUndefined(input.limits ?? {}) };
    // "0.50" and "0.5" are the same budget: stored as a plain decimal.
    if (limits.max_cost) limits.max_cost = normalizeAmount(limits.max_cost);
    const now = this.clock.date();

    const config = { model, limits, metadata: input.metadata ?? {} };
    const mode = input.concurrency;
    // Anything that may meet an active run takes the session lock first (a transaction): what it
    // does, and so its receipt's disposition, is decided for the locked row.
    if (mode === 'steer' || mode === 'interrupt' || mode === 'enqueue') return this.uow.run(() => this.locked(principal, session, input, config, mode, now));
    try {
      // ONE statement, written only if the session is idle: the run starts (receipt `started`).
      return await this.insert(session, input, config, now, mode, 'started');
    } catch (err) {
      // The session has an active run and its default is steer, interrupt or enqueue. Inside a
      // batch the statement already failed (the idempotent executor runs the operation again in
      // a transaction); inside a transaction only the failed write was rolled back.
      if (err instanceof SessionDefaultConcurrency) {
        const path = () => this.locked(principal, session, input, config, err.mode, now);
        return this.uow.inTransaction ? path() : this.uow.run(path);
      }
      // The active run waits for input (ask_user): this input answers it, whatever the mode.
      if (err instanceof SessionAwaitsInput) {
        const path = () => this.answerOrAdmit(principal, session, input, config, mode, now);
        return this.uow.inTransaction ? path() : this.uow.run(path);
      }
      throw err;
    }
  }

  /**
   * The session's active run waited for input when the insert was tried: with the session row
   * locked, the input answers it (CONTRACT 17) if it still waits; otherwise (answered or cancelled
   * meanwhile) the input is admitted as its mode says, as if the run had never waited.
   */
  private async answerOrAdmit(principal: Principal, session: SessionFacts, input: CreateRunInput, config: RunConfig, mode: 'reject' | 'enqueue' | undefined, now: Date): Promise<CreateRunResult> {
    const activeId = await this.sessions.lockActiveRun(session.id);
    const answered = activeId ? await this.answerInput(activeId, session, input, now) : null;
    if (answered) return answered;
    try {
      return await this.insert(session, input, config, now, mode, 'started');
    } catch (err) {
      if (err instanceof SessionDefaultConcurrency) return this.locked(principal, session, input, config, err.mode, now);
      throw err;
    }
  }

  /**
   * The input as the answer of the active run's `ask_user` (the decider's `input_answered` rule,
   * through the one write path): its user message (naming that run) commits with the run's
   * resume. Null when the run does not wait for input (then nothing is written). The caller holds
   * the session row lock.
   */
  private async answerInput(activeId: string, session: SessionFacts, input: CreateRunInput, now: Date): Promise<CreateRunResult | null> {
    const userMessageId = newId('msg');
    // The answer is the ask_user call's result: scrubbed of the run's resolved secrets like every
    // tool result (its user message too, so the history never holds the raw value).
    const scrubber = await this.path.scrubberFor(session.tenantId, [activeId]);
    const content = scrubber.empty ? input.content : input.content.map((p) => (p.type === 'text' ? { ...p, text: scrubber.text(p.text) } : p));
    const text = content
      .filter((p) => p.type === 'text')
      .map((p) => (p as { text: string }).text)
      .join('\n');
    const applied = await this.path.apply(
      activeId,
      { type: 'input_answered', message_id: userMessageId, text },
      {
        scrubber,
        alsoWrite: async (run, d) => {
          await this.messages.appendInput(
            { id: userMessageId, tenantId: session.tenantId, subjectId: session.subjectId, sessionId: session.id, runId: activeId, role: 'user', status: 'completed', content, metadata: {} },
            { expectedRevision: input.expectedRevision, now },
          );
          await appendToolResults(this.messages, run, d);
        },
      },
    );
    if (!applied || applied.decision.events.length === 0) return null;
    // Its receipt: steered to that run, and taken by it now (the answer is the tool's result).
    const receipt = { ...receiptOf(session, newId('inp'), userMessageId, 'steered', activeId, now), takenAt: now };
    await this.runs.answerReceipt(receipt);
    return { run: applied.run.snapshot(), userMessageId, steered: true, answered: true, receipt };
  }

  /**
   * A new run for the input (and the input message, and its receipt), in ONE statement. `started`:
   * written only if the session is idle; `queued`: the caller holds the session lock and saw an
   * active run, the new one waits behind it (FIFO).
   */
  private async insert(
    session: SessionFacts,
    input: CreateRunInput,
    config: RunConfig,
    now: Date,
    mode: 'reject' | 'enqueue' | undefined,
    disposition: 'started' | 'queued',
  ): Promise<CreateRunResult> {
    const runId = newId('run');
    const userMessageId = newId('msg');
    const receiptId = newId('inp');
    const run = Run.create({
      id: runId,
      tenantId: session.tenantId,
      subjectId: session.subjectId,
      sessionId: session.id,
      agent: { id: session.agent.id, version: session.agent.version },
      model: config.model,
      userMessageId,
      limits: config.limits,
      metadata: config.metadata,
      now,
      queueTtlMs: this.config.runQueueTtlMs,
      clientTools: input.clientTools,
      ...(input.parent ? { parent: input.parent } : {}),
    });
    // ONE statement (a batch; inside the POST's, it also stores the response and the audit
    // record): the input message appended (the session row locked, its revision checked), the
    // run inserted, the session's active run set. A failed check writes none of it.
    await this.uow.batch(async () => {
      await this.runs.insertWithInput(run, {
        message: {
          id: userMessageId,
          tenantId: session.tenantId,
          subjectId: session.subjectId,
          sessionId: session.id,
          runId, // the messages->runs foreign key is deferred: checked at the end of the statement
          role: 'user',
          status: 'completed',
          content: input.content,
          metadata: {},
        },
        expectedRevision: input.expectedRevision,
        now,
        concurrency: mode,
        receiptId,
      });
      this.uow.afterCommit(() => this.signals.workAvailable());
    });
    return { run: run.snapshot(), userMessageId, steered: false, receipt: receiptOf(session, receiptId, userMessageId, disposition, runId, now) };
  }

  /**
   * CONTRACT section 7, in one transaction with the session row locked first (a run that ends
   * locks it too, so it either ended before, or finds the steered input in its inbox then).
   * `steer`: the input is committed as a user message of the session and handed to the active
   * run. `interrupt`: the active run is cancelled (the honest cancel) and a new run is queued
   * behind it. `enqueue`: a new run queued behind the active one. Without an active run each is
   * a new run that starts.
   */
  private async locked(
    principal: Principal,
    session: SessionFacts,
    input: CreateRunInput,
    config: RunConfig,
    mode: ConcurrencyMode,
    now: Date,
  ): Promise<CreateRunResult> {
    const activeId = await this.sessions.lockActiveRun(session.id);
    const answered = activeId ? await this.answerInput(activeId, session, input, now) : null;
    if (answered) return answered;
    const admission = admit(mode, { hasActiveRun: activeId !== null, defaultConcurrency: mode });
    if (activeId === null || admission === 'queue') return this.insert(session, input, config, now, 'enqueue', activeId === null ? 'started' : 'queued');
    if (admission === 'reject') throw new DomainError('session_busy', 'the session already has an active run', { session_id: session.id, active_run_id: activeId });
    if (admission === 'interrupt') {
      // The cancel rule as for POST .../cancel (the same path); the new run queues behind it
      // (a queued or waiting run is cancelled at once: then it starts).
      await this.path.apply(activeId, { type: 'cancel_requested', requested_by: principal.subjectId });
      const still = await this.sessions.lockActiveRun(session.id);
      return this.insert(session, input, config, now, 'enqueue', still === null ? 'started' : 'queued');
    }
    const userMessageId = newId('msg');
    await this.messages.appendInput(
      { id: userMessageId, tenantId: session.tenantId, subjectId: session.subjectId, sessionId: session.id, runId: activeId, role: 'user', status: 'completed', content: input.content, metadata: {} },
      { expectedRevision: input.expectedRevision, now },
    );
    const steered: SteeredInput = { message_id: userMessageId, accepted_at: now.toISOString(), model: config.model, limits: config.limits, metadata: config.metadata };
    const receiptId = newId('inp');
    const receiptRow = { id: receiptId, tenantId: session.tenantId, subjectId: session.subjectId, sessionId: session.id, now };
    if (!(await this.runs.steer(activeId, steered, receiptRow))) throw new Error(`the active run ${activeId} of a locked session is not active`);
    const active = await this.runs.findById(activeId);
    this.uow.afterCommit(() => this.signals.inputSteered(activeId));
    return { run: active!.snapshot(), userMessageId, steered: true, receipt: receiptOf(session, receiptId, userMessageId, 'steered', activeId, now) };
  }
}

/** The receipt as the statement that accepted the input wrote it. */
function receiptOf(session: SessionFacts, id: string, messageId: string, disposition: InputDisposition, runId: string, now: Date): InputReceipt {
  return { id, tenantId: session.tenantId, subjectId: session.subjectId, sessionId: session.id, messageId, disposition, runId, takenAt: null, createdAt: now };
}

interface RunConfig {
  model: string;
  limits: RunLimits;
  metadata: Record<string, string>;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
