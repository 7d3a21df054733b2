import type { Principal } from '../../../common/auth/principal';
import type { SortOrder } from '../../../common/http/pagination';
import type { IntegrationEvent } from '../../../common/outbox/integration-events';
import type { AutomationCap, AutomationInvocation, AutomationProps } from './automation';

/** Port: automations and their invocations (tables `automations`, `automation_invocations`). */
export abstract class AutomationRepository {
  abstract insert(a: AutomationProps): Promise<void>;
  /**
   * Inserts `a` unless its tenant already has `perTenant` automations that are not completed, or
   * its owner `perMember` (counted and written holding a per-tenant lock, so concurrent creates
   * cannot pass a cap together). Returns the cap it would pass, else null (inserted).
   */
  abstract insertWithinCaps(a: AutomationProps, caps: { perTenant: number; perMember: number }): Promise<AutomationCap | null>;
  /** Conditional on `expectedRevision`; false when the row moved (or is gone). */
  abstract update(a: AutomationProps, expectedRevision: number): Promise<boolean>;
  abstract find(id: string): Promise<AutomationProps | null>;
  abstract delete(id: string): Promise<boolean>;
  abstract list(principal: Principal, page: { after?: string; limit: number; order: SortOrder; sessionId?: string }): Promise<{ items: AutomationProps[]; hasMore: boolean }>;
  /** The newest invocation of each automation given. */
  abstract lastInvocations(ids: string[]): Promise<Map<string, AutomationInvocation>>;

  /** Whether any active automation is due at `now` (one indexed read, no transaction: the idle tick's only query besides `queued`). */
  abstract anyDue(now: Date): Promise<boolean>;
  /**
   * In the caller's transaction: locks up to `limit` active automations due at `now`
   * (`next_run_at <= now`, FOR UPDATE SKIP LOCKED: nodes claiming at once get disjoint sets).
   */
  abstract lockDue(now: Date, limit: number): Promise<AutomationProps[]>;
  /** Inserts an invocation; a scheduled slot already recorded is left as it is (UNIQUE (automation_id, slot)). Returns whether it was new. */
  abstract insertInvocation(inv: AutomationInvocation): Promise<boolean>;
  /** Sets the schedule's progress of a locked automation (bumps the revision, so an edit loaded before retries on the new row). */
  abstract advance(id: string, nextRunAt: Date | null, status: AutomationProps['status'], now: Date): Promise<void>;

  /** Ids of queued invocations, oldest first. */
  abstract queued(limit: number): Promise<string[]>;
  /** In the caller's transaction: locks the invocation if it is still queued (SKIP LOCKED), else null. */
  abstract lockQueued(id: string): Promise<AutomationInvocation | null>;
  /** Marks a locked queued invocation started with its run and session. */
  abstract markStarted(id: string, runId: string, sessionId: string, now: Date): Promise<void>;
  /**
   * Marks a queued invocation failed, with the integration event (`automation.invocation_failed`)
   * in the same statement (written only when it was still queued). Returns whether it was.
   */
  abstract markFailed(id: string, error: { code: string; message: string }, sessionId: string | null, now: Date, event: IntegrationEvent): Promise<boolean>;

  abstract findInvocation(automationId: string, id: string): Promise<AutomationInvocation | null>;
  abstract findInvocationById(id: string): Promise<AutomationInvocation | null>;
  abstract listInvocations(automationId: string, page: { after?: string; limit: number; order: SortOrder }): Promise<{ items: AutomationInvocation[]; hasMore: boolean }>;
}
