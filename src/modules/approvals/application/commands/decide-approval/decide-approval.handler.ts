import { CommandBus, CommandHandler, ICommandHandler, QueryBus } from '@nestjs/cqrs';
import { ConcurrencyConflict, DomainError } from '../../../../../common/errors/domain-error';
import { retryOnConflict } from '../../../../../common/errors/retry-on-conflict';
import { GetRunOwnerQuery } from '../../../../events/application/get-run-owner.query';
import { DecideRunApprovalCommand } from '../../../../runs/application/commands/decide-run-approval/decide-run-approval.command';
import { SubagentSessionIdsQuery } from '../../../../sessions/application/queries/subagent-session-ids/subagent-session-ids.query';
import { ApprovalRepository } from '../../../domain/approval.repository';
import { DecideApprovalCommand } from './decide-approval.command';

export function approvalNotFound(id: string): DomainError {
  return new DomainError('approval_not_found', 'approval not found', { approval_id: id });
}

/** Tries of one decision while other decisions of the same approval race it. */
const ATTEMPTS = 10;

/**
 * Decides an approval: the approval says whether it can take the decision (once; the same
 * decision again is a no-op, another is 409); the run, through its command, applies it (its
 * decider's rule) and records it on the approval row in the same commit. The row's write is
 * conditional on its version: of concurrent deciders exactly one wins; the others read the
 * decided approval again (same decision: 200, other: 409). An approval inside a subagent of the
 * named run (CONTRACT 16: listed by the parent's route) is decided on the subagent's run.
 */
@CommandHandler(DecideApprovalCommand)
export class DecideApprovalHandler implements ICommandHandler<DecideApprovalCommand> {
  constructor(
    private readonly approvals: ApprovalRepository,
    private readonly queries: QueryBus,
    private readonly commands: CommandBus,
  ) {}

  async execute({ principal, runId, approvalId, decision, reason }: DecideApprovalCommand) {
    return retryOnConflict(
      async () => {
        const named = await this.queries.execute(new GetRunOwnerQuery(principal, runId));
        const approval = await this.approvals.findById(approvalId);
        if (!approval) throw approvalNotFound(approvalId);
        // An approval inside one of the run's subagents (CONTRACT 16) is decided through it too, on its own run.
        const target = approval.snapshot();
        if (target.runId !== runId && !(await this.queries.execute(new SubagentSessionIdsQuery(principal, named.sessionId, runId))).includes(target.sessionId)) throw approvalNotFound(approvalId);
        const run = target.runId === runId ? named : await this.queries.execute(new GetRunOwnerQuery(principal, target.runId));
        if (approval.status === 'pending' && run.status !== 'waiting_for_approval') {
          throw new DomainError('approval_not_pending', `the run is ${run.status}, not waiting for this approval`, { approval_id: approvalId, run_status: run.status });
        }
        const now = new Date();
        if (!approval.decide(decision, principal.subjectId, reason, now)) return approval.snapshot();
        const a = approval.snapshot();
        try {
          await this.commands.execute(new DecideRunApprovalCommand(principal, target.runId, { approvalId, toolCallId: a.toolCallId, decision, decidedBy: principal.subjectId, reason, at: now }));
        } catch (err) {
          // The run moved on because this approval was decided meanwhile: answer from the approval.
          const raced = err instanceof DomainError && err.code === 'approval_not_pending' && (await this.approvals.findById(approvalId))?.status !== 'pending';
          if (raced) throw new ConcurrencyConflict('approval', approvalId, approval.expectedVersion);
          throw err;
        }
        return a;
      },
      { attempts: ATTEMPTS, retries: (c) => c.resource === 'approval' },
    );
  }
}
