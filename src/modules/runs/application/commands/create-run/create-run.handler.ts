import { Optional } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
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
import { RunRepository, SessionDefaultConcurrency } from '../../../domain/run.repository';
import { RunPersistence } from '../../run-persistence';
import { RunSignals } from '../../run-signals';
import { CreateRunCommand, CreateRunInput, CreateRunResult } from './create-run.command';
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
    private readonly persistence: RunPersistence,
    @Optional() private readonly attachments?: AttachmentReferenceCheck,
  ) {}

  async execute({ principal, sessionId, input }: CreateRunCommand) {
    // The session's owner and pinned agent, remembered when this node created or read it (no
    // read then); whether it still exists, is not archived and is at the expected revision is
    // checked by the statement below, which locks its row.
    const { facts: session, loaded } = await this.known.owned(principal, sessionId);
    loaded?.assertAcceptsRuns();
    const model = input.model ?? session.agent.model;
    if (input.model !== undefined && !this.agents.knownModels().includes(input.model)) throw unknownModel(input.model);
    const refs = input.content.filter((p) => p.type === 'attachment_ref').map((p) => (p as { attachment_id: string }).attachment_id);
    if (refs.length > 0) {
      if (!this.attachments) throw new DomainError('attachment_not_found', 'attachments are not available', { attachment_id: refs[0] });
      await this.attachments.assertUsable({ tenantId: session.tenantId, subjectId: session.subjectId }, refs);
    }
    const limits = { ...DEFAULT_LIMITS, ...stripUndefined(input.limits ?? {}) };
    const now = new Date();

    const config = { model, limits, metadata: input.metadata ?? {} };
    const mode = input.concurrency;
    if (mode === 'steer' || mode === 'interrupt') return this.uow.run(() => this.steerOrInterrupt(principal, session, input, config, mode, now));
    try {
      return await this.insert(session, input, config, now, mode === undefined ? 'default' : mode);
    } catch (err) {
      // The session's default is steer or interrupt and it has an active run. Inside a batch the
      // statement already failed (the idempotent executor runs the operation again in a
      // transaction); inside a transaction only the failed write was rolled back.
      if (err instanceof SessionDefaultConcurrency && this.uow.inTransaction) return this.steerOrInterrupt(principal, session, input, config, err.mode, now);
      throw err;
    }
  }

  /** A new queued run for the input (and the input message), in ONE statement. */
  private async insert(session: SessionFacts, input: CreateRunInput, config: RunConfig, now: Date, mode: 'reject' | 'enqueue' | 'default'): Promise<CreateRunResult> {
    const runId = newId('run');
    const userMessageId = newId('msg');
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
        reject: mode === 'reject',
        sessionDefault: mode === 'default',
      });
      this.uow.afterCommit(() => this.signals.workAvailable());
    });
    return { run: run.snapshot(), userMessageId, steered: false };
  }

  /**
   * CONTRACT section 7, in one transaction with the session row locked first (a run that ends
   * locks it too, so it either ended before, or finds the steered input in its inbox then).
   * `steer`: the input is committed as a user message of the session and handed to the active
   * run. `interrupt`: the active run is cancelled (the honest cancel) and a new run is queued
   * behind it. Without an active run both are a new run.
   */
  private async steerOrInterrupt(
    principal: Principal,
    session: SessionFacts,
    input: CreateRunInput,
    config: RunConfig,
    mode: 'steer' | 'interrupt',
    now: Date,
  ): Promise<CreateRunResult> {
    const activeId = await this.sessions.lockActiveRun(session.id);
    if (activeId === null) return this.insert(session, input, config, now, 'enqueue');
    if (mode === 'interrupt') {
      const active = await this.runs.findById(activeId);
      if (active && active.requestCancel(principal.subjectId, now)) {
        await this.persistence.save(active);
        this.uow.afterCommit(() => this.signals.cancelRequested(activeId));
      }
      return this.insert(session, input, config, now, 'enqueue');
    }
    const userMessageId = newId('msg');
    await this.messages.appendInput(
      { id: userMessageId, tenantId: session.tenantId, subjectId: session.subjectId, sessionId: session.id, runId: activeId, role: 'user', status: 'completed', content: input.content, metadata: {} },
      { expectedRevision: input.expectedRevision, now },
    );
    const steered: SteeredInput = { message_id: userMessageId, accepted_at: now.toISOString(), model: config.model, limits: config.limits, metadata: config.metadata };
    if (!(await this.runs.steer(activeId, steered))) throw new Error(`the active run ${activeId} of a locked session is not active`);
    const active = await this.runs.findById(activeId);
    this.uow.afterCommit(() => this.signals.inputSteered(activeId));
    return { run: active!.snapshot(), userMessageId, steered: true };
  }
}

interface RunConfig {
  model: string;
  limits: RunLimits;
  metadata: Record<string, string>;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
