import { Approval } from './approval.aggregate';

export abstract class ApprovalRepository {
  abstract insert(a: Approval): Promise<void>;
  /** Conditional on the loaded version; false when another writer got there first. */
  abstract save(a: Approval): Promise<boolean>;
  abstract findById(id: string): Promise<Approval | null>;
  /** A page of a run's approvals and those of the sessions `alsoSessions` (its subagents', CONTRACT 16). */
  abstract listByRun(runId: string, alsoSessions: readonly string[], page: { after?: string; limit: number; order: 'asc' | 'desc' }): Promise<{ items: Approval[]; hasMore: boolean }>;
  /** Pending approvals of a run (to close them when the run ends). */
  abstract pendingOfRun(runId: string): Promise<Approval[]>;
  abstract expiredPending(limit: number): Promise<Approval[]>;
}
