import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { ApplyToRun } from '../../apply-to-run';
import { ApprovalsPort } from '../../approvals-port';
import { DecideRunApprovalCommand } from './decide-run-approval.command';

/**
 * An approval decision, applied to its run (the decider's `approval_decided` rule: approve ->
 * the tool runs; reject -> the model gets the rejection) and recorded on the approval row in the
 * same commit. When no approval of the step is left open the run resumes and a worker picks it up.
 */
@CommandHandler(DecideRunApprovalCommand)
export class DecideRunApprovalHandler implements ICommandHandler<DecideRunApprovalCommand> {
  constructor(
    private readonly path: ApplyToRun,
    private readonly approvals: ApprovalsPort,
  ) {}

  async execute({ principal, runId, decision: d }: DecideRunApprovalCommand): Promise<void> {
    const observation = { type: 'approval_decided', approval_id: d.approvalId, tool_call_id: d.toolCallId, decision: d.decision, decided_by: d.decidedBy, reason: d.reason } as const;
    await this.path.apply(runId, observation, {
      principal,
      // The reason as the run saw it: scrubbed of the run's resolved secrets (the approval row keeps that).
      alsoWrite: (_run, _d, seen) =>
        this.approvals.gate!.recordDecision({ approvalId: d.approvalId, decision: d.decision, decidedBy: d.decidedBy, reason: seen.type === 'approval_decided' ? seen.reason : d.reason, at: d.at }),
    });
  }
}
