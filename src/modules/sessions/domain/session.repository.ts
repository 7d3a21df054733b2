import type { WorkStatus } from './work-status';
import { Principal } from '../../../common/auth/principal';
import { SortOrder } from '../../../common/http/pagination';
import { Session } from './session.aggregate';

/** Port: persistence of Session aggregates. Writes are conditional on the loaded revision. */
export abstract class SessionRepository {
  abstract insert(session: Session): Promise<void>;
  /** Conditional UPDATE on `revision = session.expectedRevision`; throws ConcurrencyConflict on 0 rows. */
  abstract save(session: Session): Promise<void>;
  abstract findById(id: string): Promise<Session | null>;
  /** A page of a session's subagents (child sessions, CONTRACT 16) that `principal` may see (a member: their own). */
  abstract children(principal: Principal, parentSessionId: string, page: { after?: string; limit: number; order: SortOrder }): Promise<{ items: Session[]; hasMore: boolean }>;
  /**
   * The subagent sessions a run created, and theirs below them, that `principal` may see (a member:
   * their own): what the run's approvals route lists besides its own (CONTRACT 16). At most `limit`.
   */
  abstract subagentSessionIds(principal: Principal, parentSessionId: string, parentRunId: string, limit: number): Promise<string[]>;
  /** A subagent's session is closed (one statement; a top-level session is left alone). */
  abstract closeSubagent(tenantId: string, sessionId: string): Promise<void>;
  /** The ids among `ids` that still exist. */
  abstract existing(ids: string[]): Promise<string[]>;
  /** Returns whether a row was deleted. */
  abstract delete(id: string): Promise<boolean>;
  /** Sets `active_run_id` and, when `activity` is given, `last_active_at` (runs accepted, executed, cancelled). */
  /** Locks the session row (inside the caller's transaction) and answers its active run. */
  abstract lockActiveRun(sessionId: string): Promise<string | null>;
  abstract setActiveRun(sessionId: string, runId: string | null, activity?: Date): Promise<void>;
  /**
   * Session TTL sweep (CONTRACT section 17): archives (strategy `archive`, active sessions) or
   * deletes (strategy `delete`, with their runs, messages and events) up to `limit` sessions each
   * whose `last_active_at + ttl` is at or before `now` and that have no active run. Each is ONE
   * conditional statement over rows locked with SKIP LOCKED, so a run starting at the same moment
   * (it locks the row and sets `active_run_id`) either wins or waits, and nodes sweeping at once
   * take disjoint sessions. Returns the ids changed.
   */
  abstract sweepExpired(now: Date, limit: number): Promise<{ archived: string[]; deleted: string[] }>;
  abstract list(
    principal: Principal,
    page: { after?: string; limit: number; order: SortOrder },
    filter?: { workStatus?: WorkStatus },
  ): Promise<{ items: Session[]; hasMore: boolean }>;
  /** The work status of each of `ids` (CONTRACT section 7), in one read. */
  abstract workStatuses(ids: readonly string[]): Promise<Map<string, WorkStatus>>;
}
