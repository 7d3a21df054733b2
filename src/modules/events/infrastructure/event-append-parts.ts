import { GuardedTail } from '../../../common/database/statement';
import { EventStreamOwner, NewRunEvent, StoredRunEvent } from '../domain/run-event';

/** An event append as the tail of another module's guarded statement, and what its rows mean. */
export interface GuardedEventAppend extends GuardedTail {
  /** The statement's rows: the stored events, or null when the guard returned no row (nothing written). */
  complete(rows: Array<Record<string, unknown>>): Promise<StoredRunEvent[] | null>;
}

/**
 * Port (infrastructure level): the events module's part of a statement that another module's
 * repository runs (a run save). It takes values and gives an opaque part, whose parameters the
 * statement numbers (common/database/statement.ts); `run_events` and `event_streams` SQL stays here.
 */
export abstract class EventAppendParts {
  /**
   * `EventStore.append` as the tail of a guarded statement: the counters are bumped and the rows
   * inserted only when the guard returned a row. Run it with `UnitOfWork.statement`, then `complete`.
   */
  abstract appendAfterGuard(owner: EventStreamOwner, events: NewRunEvent[]): GuardedEventAppend;
}
