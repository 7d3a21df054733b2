import { GuardedRider, StatementParams } from '../database/statement';
import { OutboxBacklog } from '../metrics/metrics';

/**
 * An integration event: a fact one module publishes for others (today the webhooks module), as
 * values. The producer owns `type`, `objectId` and `payload` (what it states about the change at
 * that moment); consumers never read the producer's tables to learn it happened.
 */
export interface IntegrationEvent {
  tenantId: string;
  /** Dotted, producer-prefixed: `run.completed`, `attachment.ready`, ... */
  type: string;
  /** The resource the event is about (`run_...`, `att_...`). */
  objectId: string;
  /** Small facts of the change, as the producer states them (JSON). */
  payload: Record<string, unknown>;
}

/**
 * Port (infrastructure level) for producers: an integration event written by the producer's own
 * statement, so it commits with the change that causes it and never without it (an outbox).
 * It takes values and gives an opaque part whose parameters the statement numbers
 * (common/database/statement.ts); the outbox table's SQL stays behind it.
 */
export abstract class IntegrationEventOutbox {
  /** A rider of a guarded statement: the events are written only when the guard matched. */
  abstract afterGuard(events: readonly IntegrationEvent[]): GuardedRider;
}

/** The CTE of a consume statement that holds the events taken (columns below). */
export interface TakenEvents {
  readonly name: 'taken';
  /** Its columns: `id` (bigint, outbox order), `tenant_id`, `type`, `object_id`, `payload` (jsonb), `occurred_at` (timestamptz). */
}

/** CTE definitions (`name AS (...)`, comma-separated) that consume `taken` (they read it; they write their own tables). */
export type TakenEventsConsumer = (params: StatementParams, taken: TakenEvents) => string;

/**
 * Port for the consumer: takes events out of the outbox. There is ONE consumer (the webhooks
 * module): taking an event deletes it. A second consumer would get its own cursor instead.
 */
export abstract class IntegrationEventFeed {
  /**
   * Takes up to `limit` of the oldest events (`FOR UPDATE SKIP LOCKED`: nodes taking at once get
   * disjoint sets) and runs `consumer`'s CTEs over them, as ONE statement: the events leave the
   * outbox exactly when what the consumer wrote from them commits. Returns how many were taken.
   */
  abstract consume(limit: number, consumer: TakenEventsConsumer): Promise<number>;
  /** Events not taken yet (counted up to a bound) and the age of the oldest. */
  abstract backlog(): Promise<OutboxBacklog>;
}
