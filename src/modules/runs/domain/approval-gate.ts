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

/** A decision on an approval, recorded on its row in the commit that applies it to its run. */
export interface ApprovalDecisionRecord {
  approvalId: string;
  decision: 'approve' | 'reject';
  decidedBy: string;
  reason: string | null;
  at: Date;
}

/**
 * Port (implemented by the approvals module, which runs never imports). Every method runs inside
 * the caller's transaction, after the session and run rows are locked.
 */
export abstract class ApprovalGate {
  /** Opens the approval row of a call that now awaits it. */
  abstract open(approval: ApprovalToOpen): Promise<void>;
  /**
   * Records a decision on a pending approval row, conditional on the row being as it was read
   * (ConcurrencyConflict on resource `approval` otherwise: another decision or its run's end came first).
   */
  abstract recordDecision(decision: ApprovalDecisionRecord): Promise<void>;
  /** The run ended: its undecided approvals can no longer be decided. */
  abstract closeForRun(runId: string, status: 'cancelled' | 'expired'): Promise<void>;
}
