import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { AppConfig } from '../../../../../common/config/app-config';
import { UnitOfWork } from '../../../../../common/database/unit-of-work';
import { DomainError } from '../../../../../common/errors/domain-error';
import { newId } from '../../../../../common/ids/ids';
import { AgentDirectory } from '../../../../agents/domain/agent-definition';
import { Session } from '../../../domain/session.aggregate';
import { SessionRepository } from '../../../domain/session.repository';
import { CreateSessionCommand } from './create-session.command';
import { KnownSessions } from '../../known-sessions';

@CommandHandler(CreateSessionCommand)
export class CreateSessionHandler implements ICommandHandler<CreateSessionCommand> {
  constructor(
    private readonly repo: SessionRepository,
    private readonly agents: AgentDirectory,
    private readonly config: AppConfig,
    private readonly uow: UnitOfWork,
    private readonly known: KnownSessions,
  ) {}

  async execute({ principal, input }: CreateSessionCommand) {
    if (input.agent && input.agentId !== undefined) {
      throw new DomainError('invalid_request', 'give either agent_id or an inline agent, not both', { errors: [{ field: 'agent', message: 'cannot be combined with agent_id' }] });
    }
    const agentId = input.agentId ?? this.config.agentDefaultId;
    // An inline configuration becomes a hidden one-version agent of the tenant, pinned like any other;
    // else a file agent, or an API agent of the caller's tenant (another tenant's is the same 404).
    const agent = input.agent
      ? await this.agents.createInline(principal.tenantId, principal.subjectId, `inline_${newId('sess').slice(5).toLowerCase()}`, input.agent)
      : input.agentVersion !== undefined
        ? await this.agents.findPinned(principal.tenantId, agentId, input.agentVersion)
        : await this.agents.find(principal.tenantId, agentId);
    if (!agent) throw new DomainError('agent_not_found', `agent "${agentId}" is not configured`, { agent_id: agentId });
    const session = Session.create({
      id: newId('sess'),
      tenantId: principal.tenantId,
      subjectId: principal.subjectId,
      agent: { id: agent.id, version: agent.version, model: agent.model },
      title: input.title ?? null,
      metadata: input.metadata ?? {},
      defaultConcurrency: input.defaultConcurrency,
      // Omitted: SESSION_TTL_SECONDS (archive); null: no TTL.
      ttl: input.ttl !== undefined ? input.ttl : this.config.sessionTtlSeconds !== null ? { seconds: this.config.sessionTtlSeconds, strategy: 'archive' } : null,
      ...(input.parent ? { parent: input.parent } : {}),
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
