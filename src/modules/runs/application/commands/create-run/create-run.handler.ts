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
import { DEFAULT_LIMITS, Run } from '../../../domain/run.aggregate';
import { RunRepository } from '../../../domain/run.repository';
import { RunSignals } from '../../run-signals';
import { CreateRunCommand } from './create-run.command';

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
    @Optional() private readonly attachments?: AttachmentReferenceCheck,
  ) {}

  async execute({ principal, sessionId, input }: CreateRunCommand) {
    // The session's owner and pinned agent, remembered when this node created or read it (no
    // read then); whether it still exists, is not archived and is at the expected revision is
    // checked by the statement below, which locks its row.
    const { facts: session, loaded } = await this.known.owned(principal, sessionId);
    loaded?.assertAcceptsRuns();
    const pinned = session.agent;
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
    const userMessageId = newId('msg');
    const run = Run.create({
      id: runId,
      tenantId: session.tenantId,
      subjectId: session.subjectId,
      sessionId,
      agent: { id: pinned.id, version: pinned.version },
      model,
      userMessageId,
      limits,
      metadata: input.metadata ?? {},
      now,
      queueTtlMs: this.config.runQueueTtlMs,
    });
    // ONE statement (a batch; inside the POST's, it also stores the response and the audit
    // record): the input message appended (the session row locked, its revision checked), the
    // run inserted, the session's active run set. A failed check writes none of it.
    await this.uow.batch(async () => {
      const inserted = this.runs.insertWrites(run, { now, reject: input.concurrency === 'reject' });
      const message = this.messages.appendWrite(
        {
          id: userMessageId,
          tenantId: session.tenantId,
          subjectId: session.subjectId,
          sessionId,
          runId, // the messages->runs foreign key is deferred: checked at the end of the statement
          role: 'user',
          status: 'completed',
          content: input.content,
          metadata: {},
        },
        { expectedRevision: input.expectedRevision, now, session: inserted.session, refuseArchived: true },
      );
      await this.uow.write(message, inserted.run);
      this.uow.afterCommit(() => this.signals.workAvailable());
    });
    return run.snapshot();
  }
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
