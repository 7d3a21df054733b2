import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { UnitOfWork } from '../../../../../common/database/unit-of-work';
import { invalidRequest } from '../../../../../common/errors/domain-error';
import { AgentCatalog } from '../../../../agents/domain/agent-definition';
import { SessionRepository } from '../../../domain/session.repository';
import { saveWithRetry } from '../save-with-retry';
import { UpdateSessionCommand } from './update-session.command';

@CommandHandler(UpdateSessionCommand)
export class UpdateSessionHandler implements ICommandHandler<UpdateSessionCommand> {
  constructor(
    private readonly repo: SessionRepository,
    private readonly agents: AgentCatalog,
    private readonly uow: UnitOfWork,
  ) {}

  async execute({ principal, sessionId, changes, expectedRevision }: UpdateSessionCommand) {
    if (changes.model !== undefined && !this.agents.knownModels().includes(changes.model)) {
      throw invalidRequest(`unknown model "${changes.model}"`, [
        { field: 'agent.model', message: `must be one of: ${this.agents.knownModels().join(', ')}` },
      ]);
    }
    const session = await saveWithRetry(this.repo, this.uow, principal, sessionId, expectedRevision, (s) => s.update(changes, new Date()));
    return session.snapshot();
  }
}
