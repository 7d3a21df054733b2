import { DomainError } from '../../../common/errors/domain-error';

export type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'expired' | 'cancelled';
export type Decision = 'approve' | 'reject';

export interface ApprovalProps {
  id: string;
  tenantId: string;
  subjectId: string;
  sessionId: string;
  runId: string;
  toolCallId: string;
  toolName: string;
  arguments: unknown;
  risk: string;
  status: ApprovalStatus;
  decidedBy: string | null;
  reason: string | null;
  version: number;
  createdAt: Date;
  decidedAt: Date | null;
  expiresAt: Date;
}

/**
 * An approval of one risky tool call. Decided once: the same decision again is a no-op, a
 * different one is 409 `approval_already_decided`; expired or cancelled approvals take no decision.
 */
export class Approval {
  private constructor(
    private props: ApprovalProps,
    private readonly loadedVersion: number,
  ) {}

  static open(input: Omit<ApprovalProps, 'status' | 'decidedBy' | 'reason' | 'version' | 'decidedAt'>): Approval {
    return new Approval({ ...input, status: 'pending', decidedBy: null, reason: null, version: 1, decidedAt: null }, 0);
  }

  static restore(props: ApprovalProps): Approval {
    return new Approval({ ...props }, props.version);
  }

  get id(): string {
    return this.props.id;
  }
  get status(): ApprovalStatus {
    return this.props.status;
  }
  get expectedVersion(): number {
    return this.loadedVersion;
  }
  snapshot(): Readonly<ApprovalProps> {
    return { ...this.props };
  }

  /** Returns false when the same decision was already taken (nothing to do). */
  decide(decision: Decision, by: string, reason: string | null, now: Date): boolean {
    const wanted: ApprovalStatus = decision === 'approve' ? 'approved' : 'rejected';
    if (this.props.status === wanted) return false;
    if (this.props.status === 'approved' || this.props.status === 'rejected') {
      throw new DomainError('approval_already_decided', `the approval was already ${this.props.status}`, {
        approval_id: this.props.id,
        status: this.props.status,
        decided_by: this.props.decidedBy,
      });
    }
    if (this.props.status !== 'pending') {
      throw new DomainError('approval_not_pending', `the approval is ${this.props.status}`, { approval_id: this.props.id, status: this.props.status });
    }
    this.props = { ...this.props, status: wanted, decidedBy: by, reason, decidedAt: now, version: this.loadedVersion + 1 };
    return true;
  }

  close(status: 'expired' | 'cancelled', now: Date): void {
    if (this.props.status !== 'pending') return;
    this.props = { ...this.props, status, decidedAt: now, version: this.loadedVersion + 1 };
  }
}
