import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { SessionRepository } from '../../../domain/session.repository';
import { CloseSubagentCommand } from './close-subagent.command';

@CommandHandler(CloseSubagentCommand)
export class CloseSubagentHandler implements ICommandHandler<CloseSubagentCommand> {
  constructor(private readonly repo: SessionRepository) {}

  async execute({ tenantId, sessionId }: CloseSubagentCommand): Promise<void> {
    await this.repo.closeSubagent(tenantId, sessionId);
  }
}
