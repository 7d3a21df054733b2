import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { AppConfig } from '../../../../../common/config/app-config';
import { UnitOfWork } from '../../../../../common/database/unit-of-work';
import { DomainError } from '../../../../../common/errors/domain-error';
import { newId } from '../../../../../common/ids/ids';
import { AgentCatalog } from '../../../../agents/domain/agent-definition';
import { Session } from '../../../domain/session.aggregate';
import { SessionRepository } from '../../../domain/session.repository';
import { CreateSessionCommand } from './create-session.command';
import { KnownSessions } from '../../known-sessions';

@CommandHandler(CreateSessionCommand)
export class CreateSessionHandler implements ICommandHandler<CreateSessionCommand> {
  constructor(
    private readonly repo: SessionRepository,
    private readonly agents: AgentCatalog,
    private readonly config: AppConfig,
    private readonly uow: UnitOfWork,
    private readonly known: KnownSessions,
  ) {}

  async execute({ principal, input }: CreateSessionCommand) {
    const agentId = input.agentId ?? this.config.agentDefaultId;
    const agent = this.agents.get(agentId);
    if (!agent) throw new DomainError('agent_not_found', `agent "${agentId}" is not configured`, { agent_id: agentId });
    const session = Session.create({
      id: newId('sess'),
      tenantId: principal.tenantId,
      subjectId: principal.subjectId,
      agent: { id: agent.id, version: agent.version, model: agent.model },
      title: input.title ?? null,
      metadata: input.metadata ?? {},
      defaultConcurrency: input.defaultConcurrency,
      now: new Date(),
    });
    // One write: inside the POST's batch it shares the statement that stores the response.
    await this.uow.batch(async () => {
      await this.repo.insert(session);
      this.uow.afterCommit(() => this.known.remember(session));
    });
    return session.snapshot();
  }
}
