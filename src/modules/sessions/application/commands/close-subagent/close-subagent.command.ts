import { Command } from '@nestjs/cqrs';

/** `close_subagent` of its parent run (CONTRACT 16), committed: the child session's `subagent.status` becomes `closed`. */
export class CloseSubagentCommand extends Command<void> {
  constructor(
    readonly tenantId: string,
    readonly sessionId: string,
  ) {
    super();
  }
}
