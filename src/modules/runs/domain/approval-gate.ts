import { PendingToolCall, Run } from './run.aggregate';

/**
 * Port (implemented by the approvals module). Both methods run inside the caller's transaction.
 */
export abstract class ApprovalGate {
  /** Opens an approval for a `risk: approve` tool call and records `approval.requested` on the run. */
  abstract open(run: Run, call: PendingToolCall): Promise<{ approvalId: string; expiresAt: Date }>;
  /** The run ended: its undecided approvals can no longer be decided. */
  abstract closeForRun(runId: string, status: 'cancelled' | 'expired'): Promise<void>;
}
