import { PendingToolCall } from './run.aggregate';

/** An approval the loop opens for a `risk: approve` call (its `approval.requested` is the run's own event). */
export interface ApprovalToOpen {
  tenantId: string;
  subjectId: string;
  sessionId: string;
  runId: string;
  approvalId: string;
  call: PendingToolCall;
  expiresAt: Date;
}

/**
 * Port (implemented by the approvals module). Both methods run inside the caller's transaction.
 */
export abstract class ApprovalGate {
  /** Opens the approval row of a call that now awaits it. */
  abstract open(approval: ApprovalToOpen): Promise<void>;
  /** The run ended: its undecided approvals can no longer be decided. */
  abstract closeForRun(runId: string, status: 'cancelled' | 'expired'): Promise<void>;
}
