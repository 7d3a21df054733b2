import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { ApplyToRun } from '../../apply-to-run';
import { ExpireRunApprovalCommand } from './expire-run-approval.command';

/**
 * A run still waiting for the approval expires (the decider's `approval_expired` rule); its
 * pending approval rows close with it, in its commit (RunPersistence). Any other run is unchanged.
 */
@CommandHandler(ExpireRunApprovalCommand)
export class ExpireRunApprovalHandler implements ICommandHandler<ExpireRunApprovalCommand> {
  constructor(private readonly path: ApplyToRun) {}

  async execute({ runId, approvalId }: ExpireRunApprovalCommand): Promise<boolean> {
    const applied = await this.path.apply(runId, { type: 'approval_expired', approval_id: approvalId });
    return applied !== null && applied.decision.effect.type === 'finish';
  }
}
