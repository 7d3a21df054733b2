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
      // The run decides what the decision means for it (approve: the tool runs; reject: the
      // model gets the rejection); it resumes when no approval of the step is left open.
      run.decideApproval({ approvalId: a.id, toolCallId: a.toolCallId, decision, decidedBy: principal.subjectId, reason }, now);
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
