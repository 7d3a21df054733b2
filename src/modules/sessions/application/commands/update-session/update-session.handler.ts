import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { UnitOfWork } from '../../../../../common/database/unit-of-work';
import { invalidRequest } from '../../../../../common/errors/domain-error';
import { AgentCatalog } from '../../../../agents/domain/agent-definition';
import { SessionRepository } from '../../../domain/session.repository';
import { saveWithRetry } from '../save-with-retry';
import { KnownSessions } from '../../known-sessions';
import { UpdateSessionCommand } from './update-session.command';

@CommandHandler(UpdateSessionCommand)
export class UpdateSessionHandler implements ICommandHandler<UpdateSessionCommand> {
  constructor(
    private readonly repo: SessionRepository,
    private readonly agents: AgentCatalog,
    private readonly uow: UnitOfWork,
    private readonly known: KnownSessions,
  ) {}

  async execute({ principal, sessionId, changes, expectedRevision }: UpdateSessionCommand) {
    if (changes.model !== undefined && !this.agents.knownModels().includes(changes.model)) {
      throw invalidRequest(`unknown model "${changes.model}"`, [
        { field: 'agent.model', message: `must be one of: ${this.agents.knownModels().join(', ')}` },
      ]);
    }
    const session = await saveWithRetry(this.repo, this.uow, principal, sessionId, expectedRevision, (s) => s.update(changes, new Date()));
    // The model is one of the facts a run is accepted with (CONTRACT 7: frozen per run from then
    // on): this node's remembered facts follow the change once it is committed.
    if (changes.model !== undefined) this.uow.afterCommit(() => this.known.remember(session));
    return session.snapshot();
  }
}
