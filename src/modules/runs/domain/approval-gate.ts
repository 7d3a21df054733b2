import { PendingToolCall, Run } from './run.aggregate';

/**
 * Port (implemented by the approvals module): opens an approval for a `risk: approve` tool call
 * inside the loop's transaction and records `approval.requested` on the run.
 */
export abstract class ApprovalGate {
  abstract open(run: Run, call: PendingToolCall): Promise<{ approvalId: string; expiresAt: Date }>;
}
