import { Command } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';

export interface RunApprovalDecision {
  approvalId: string;
  toolCallId: string;
  decision: 'approve' | 'reject';
  decidedBy: string;
  reason: string | null;
  /** When it was decided (the approval row records this time). */
  at: Date;
}

/** A decision on one of a waiting run's approvals (sent by the approvals module). */
export class DecideRunApprovalCommand extends Command<void> {
  constructor(
    readonly principal: Principal,
    readonly runId: string,
    readonly decision: RunApprovalDecision,
  ) {
    super();
  }
}
