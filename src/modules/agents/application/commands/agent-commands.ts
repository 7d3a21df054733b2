import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { Principal } from '../../../../common/auth/principal';
import { AgentDirectory, PreparedAgentVersion } from '../../domain/agent-definition';
import { AgentView } from '../agent-view';

/** Stores a prepared version: version 1 of a new agent (`first`) or the next one. */
export class CreateAgentVersionCommand extends Command<AgentView> {
  constructor(
    readonly principal: Principal,
    readonly prepared: PreparedAgentVersion,
    readonly first: boolean,
  ) {
    super();
  }
}

/** No new sessions may use the agent; sessions pinned to its versions keep them. */
export class DeleteAgentCommand extends Command<void> {
  constructor(
    readonly principal: Principal,
    readonly agentId: string,
  ) {
    super();
  }
}

@CommandHandler(CreateAgentVersionCommand)
export class CreateAgentVersionHandler implements ICommandHandler<CreateAgentVersionCommand> {
  constructor(private readonly directory: AgentDirectory) {}

  execute({ principal, prepared, first }: CreateAgentVersionCommand) {
    return this.directory.createVersion(principal.tenantId, prepared, first, principal.subjectId);
  }
}

@CommandHandler(DeleteAgentCommand)
export class DeleteAgentHandler implements ICommandHandler<DeleteAgentCommand> {
  constructor(private readonly directory: AgentDirectory) {}

  execute({ principal, agentId }: DeleteAgentCommand) {
    return this.directory.remove(principal.tenantId, agentId);
  }
}
