import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { ConcurrencyConflict, DomainError } from '../../../../../common/errors/domain-error';
import { loadOwnedRun } from '../../../../runs/application/load-owned-run';
import { RunPersistence } from '../../../../runs/application/run-persistence';
import { RunSignals } from '../../../../runs/application/run-signals';
import { RunRepository } from '../../../../runs/domain/run.repository';
import { ApprovalRepository } from '../../../domain/approval.repository';
import { DecideApprovalCommand } from './decide-approval.command';

export function approvalNotFound(id: string): DomainError {
  return new DomainError('approval_not_found', 'approval not found', { approval_id: id });
}

/**
 * Decides an approval and, in the same transaction, updates the waiting run: approve -> the
 * tool will run; reject -> the model gets the rejection as the tool result. When no approval of
 * the step is left open the run resumes (`running`, no lease) and a worker picks it up from its
 * saved state. The approval write is conditional on its version: of concurrent deciders exactly
 * one wins; the others see the decided approval (same decision: 200, other: 409).
 */
@CommandHandler(DecideApprovalCommand)
export class DecideApprovalHandler implements ICommandHandler<DecideApprovalCommand> {
  constructor(
    private readonly approvals: ApprovalRepository,
    private readonly runs: RunRepository,
    private readonly persistence: RunPersistence,
    private readonly signals: RunSignals,
  ) {}

  async execute({ principal, runId, approvalId, decision, reason }: DecideApprovalCommand) {
    for (let attempt = 1; ; attempt++) {
      const run = await loadOwnedRun(this.runs, principal, runId);
      const approval = await this.approvals.findById(approvalId);
      if (!approval || approval.snapshot().runId !== runId) throw approvalNotFound(approvalId);
      if (approval.status === 'pending' && run.status !== 'waiting_for_approval') {
        throw new DomainError('approval_not_pending', `the run is ${run.status}, not waiting for this approval`, {
          approval_id: approvalId,
          run_status: run.status,
        });
      }
      const now = new Date();
      if (!approval.decide(decision, principal.subjectId, reason, now)) return approval.snapshot();
      const a = approval.snapshot();
      const call = run.state.pending.find((p) => p.tool_call_id === a.toolCallId);
      if (!call || call.status !== 'awaiting_approval') {
        throw new DomainError('approval_not_pending', 'the run is not waiting for this approval', { approval_id: approvalId });
      }
      if (decision === 'approve') run.updatePending(a.toolCallId, { status: 'approved' });
      else run.updatePending(a.toolCallId, { status: 'requested', rejection: { reason, decided_by: principal.subjectId } });
      run.record(decision === 'approve' ? 'approval.accepted' : 'approval.rejected', {
        approval_id: a.id,
        tool_call_id: a.toolCallId,
        decided_by: principal.subjectId,
        reason,
      });
      if (!run.state.pending.some((p) => p.status === 'awaiting_approval')) run.resume();
      try {
        await this.persistence.save(run, async () => {
          if (!(await this.approvals.save(approval))) throw new ConcurrencyConflict('approval', approvalId, approval.expectedVersion);
        });
      } catch (err) {
        if (err instanceof ConcurrencyConflict && attempt < 10) continue;
        throw err;
      }
      this.signals.workAvailable();
      return approval.snapshot();
    }
  }
}
