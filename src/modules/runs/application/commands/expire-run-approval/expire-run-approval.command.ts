import { Command } from '@nestjs/cqrs';

/** An approval of the run was not decided in time (sent by the approvals module's sweeper). Answers whether the run expired. */
export class ExpireRunApprovalCommand extends Command<boolean> {
  constructor(
    readonly runId: string,
    readonly approvalId: string,
  ) {
    super();
  }
}
