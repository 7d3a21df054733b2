import { Principal } from '../../../common/auth/principal';
import { SortOrder } from '../../../common/http/pagination';
import { Session } from './session.aggregate';

/** Port: persistence of Session aggregates. Writes are conditional on the loaded revision. */
export abstract class SessionRepository {
  abstract insert(session: Session): Promise<void>;
  /** Conditional UPDATE on `revision = session.expectedRevision`; throws ConcurrencyConflict on 0 rows. */
  abstract save(session: Session): Promise<void>;
  abstract findById(id: string): Promise<Session | null>;
  /** The ids among `ids` that still exist. */
  abstract existing(ids: string[]): Promise<string[]>;
  /** Returns whether a row was deleted. */
  abstract delete(id: string): Promise<boolean>;
  /** Sets `active_run_id` and, when `activity` is given, `last_active_at` (runs accepted, executed, cancelled). */
  /** Locks the session row (inside the caller's transaction) and answers its active run. */
  abstract lockActiveRun(sessionId: string): Promise<string | null>;
  abstract setActiveRun(sessionId: string, runId: string | null, activity?: Date): Promise<void>;
  abstract list(
    principal: Principal,
    page: { after?: string; limit: number; order: SortOrder },
  ): Promise<{ items: Session[]; hasMore: boolean }>;
}
