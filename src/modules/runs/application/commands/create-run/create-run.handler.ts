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
import { SessionRepository } from '../../../../sessions/domain/session.repository';
import { loadOwnedSession } from '../../../../sessions/application/load-owned-session';
import { DEFAULT_LIMITS, Run } from '../../../domain/run.aggregate';
import { RunRepository } from '../../../domain/run.repository';
import { RunSignals } from '../../run-signals';
import { CreateRunCommand } from './create-run.command';

/**
 * Commits the user message and the queued run in ONE transaction (the session row is locked by
 * the message append, which serialises concurrent creates on a session). Never executes the
 * run: the worker does, after commit.
 */
@CommandHandler(CreateRunCommand)
export class CreateRunHandler implements ICommandHandler<CreateRunCommand> {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly sessions: SessionRepository,
    private readonly messages: MessageRepository,
    private readonly runs: RunRepository,
    private readonly agents: AgentCatalog,
    private readonly config: AppConfig,
    private readonly signals: RunSignals,
    @Optional() private readonly attachments?: AttachmentReferenceCheck,
  ) {}

  async execute({ principal, sessionId, input }: CreateRunCommand) {
    const session = await loadOwnedSession(this.sessions, principal, sessionId);
    session.assertAcceptsRuns();
    const pinned = session.snapshot().agent;
    const model = input.model ?? pinned.model;
    if (input.model !== undefined && !this.agents.knownModels().includes(input.model)) throw unknownModel(input.model);
    const refs = input.content.filter((p) => p.type === 'attachment_ref').map((p) => (p as { attachment_id: string }).attachment_id);
    if (refs.length > 0) {
      if (!this.attachments) throw new DomainError('attachment_not_found', 'attachments are not available', { attachment_id: refs[0] });
      await this.attachments.assertUsable({ tenantId: session.tenantId, subjectId: session.subjectId }, refs);
    }
    const limits = { ...DEFAULT_LIMITS, ...stripUndefined(input.limits ?? {}) };
    const now = new Date();

    const runId = newId('run');
    const run = await this.uow.run(async () => {
      const userMessage = await this.messages.append(
        {
          id: newId('msg'),
          tenantId: session.tenantId,
          subjectId: session.subjectId,
          sessionId,
          runId, // the messages->runs foreign key is deferred: the run row follows in this transaction
          role: 'user',
          status: 'completed',
          content: input.content,
          metadata: {},
        },
        { expectedRevision: input.expectedRevision, now },
      );
      const created = Run.create({
        id: runId,
        tenantId: session.tenantId,
        subjectId: session.subjectId,
        sessionId,
        agent: { id: pinned.id, version: pinned.version },
        model,
        userMessageId: userMessage.id,
        limits,
        metadata: input.metadata ?? {},
        now,
        queueTtlMs: this.config.runQueueTtlMs,
      });
      // One statement: the run row, and the session's active run (the one before it, else this one).
      const active = await this.runs.insertInSession(created, now);
      if (active && input.concurrency === 'reject') {
        // Rolls the transaction back: neither the message nor the run is kept.
        throw new DomainError('session_busy', 'the session already has an active run', { session_id: sessionId, active_run_id: active });
      }
      this.uow.afterCommit(() => this.signals.workAvailable());
      return created;
    });
    return run.snapshot();
  }
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
