/**
 * A session's work status (CONTRACT section 7): `idle` (no run yet, or the last one completed),
 * `running` (its active run is queued, running or cancelling), `waiting` (its active run waits),
 * or the last run's terminal status `failed` / `cancelled` / `terminated` / `expired` until the
 * next run starts.
 */
export type WorkStatus = 'idle' | 'running' | 'waiting' | 'failed' | 'cancelled' | 'terminated' | 'expired';

export const WORK_STATUSES: readonly WorkStatus[] = ['idle', 'running', 'waiting', 'failed', 'cancelled', 'terminated', 'expired'];

/**
 * Port (infrastructure level, reversed): the runs module's SQL of a session's work status, for
 * the sessions module's reads (a session resource, the list and its `work_status` filter) without
 * reading the runs table itself. Implemented by the runs module; found at start-up (ModuleRef).
 */
export abstract class SessionWorkStatusSql {
  /** A SQL expression (text, one of WORK_STATUSES) for the session whose id is the SQL `sessionId`. */
  abstract expression(sessionId: string): string;
}
