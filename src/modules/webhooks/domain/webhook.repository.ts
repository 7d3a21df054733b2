import { DeliveryStatus, EndpointPolicy, WebhookDelivery, WebhookEndpoint } from './webhook-events';
import type { OutboxBacklog } from '../../../common/metrics/metrics';

export interface EndpointPatch {
  url?: string;
  events?: string[];
  description?: string | null;
  enabled?: boolean;
  sealedSecret?: string;
}

export interface Page<T> {
  items: T[];
  hasMore: boolean;
}

/** Port: the tenant's endpoints and their delivery log (every method is scoped to the tenant). */
export abstract class WebhookEndpointRepository {
  abstract insert(e: WebhookEndpoint, sealedSecret: string): Promise<void>;
  /** Ordered by id; `after` is an endpoint id of the previous page. */
  abstract list(tenantId: string, after: string | undefined, limit: number, order?: 'asc' | 'desc'): Promise<Page<WebhookEndpoint>>;
  abstract find(tenantId: string, id: string): Promise<WebhookEndpoint | null>;
  /** Whether an enabled endpoint of the tenant subscribes to `type`. */
  abstract subscribed(tenantId: string, type: string): Promise<boolean>;
  /** The endpoint's sealed signing secret and its version; null when the tenant has no such endpoint. */
  abstract sealedSecret(tenantId: string, id: string): Promise<{ sealedSecret: string; secretVersion: number } | null>;
  /**
   * Only the fields given change (a new `sealedSecret` increments `secret_version`); null when the
   * tenant has no such endpoint. Disabling it ends its pending deliveries that are not in flight
   * `failed` (endpoint_disabled, attempts as they were) in the same statement.
   */
  abstract update(tenantId: string, id: string, patch: EndpointPatch): Promise<WebhookEndpoint | null>;
  /**
   * False when the tenant has no such endpoint. The endpoint disappears from every route (its
   * secret is wiped) and ends its pending deliveries as disabling does; the rows are kept.
   */
  abstract delete(tenantId: string, id: string): Promise<boolean>;
  /** Newest first; `after` is a delivery id of the previous page. */
  abstract deliveries(tenantId: string, endpointId: string, after: string | undefined, limit: number, order?: 'asc' | 'desc'): Promise<Page<WebhookDelivery>>;
}

export interface ClaimedDelivery {
  delivery: WebhookDelivery;
  endpoint: (WebhookEndpoint & { sealedSecret: string }) | null;
}

export interface AttemptOutcome {
  status: DeliveryStatus;
  responseStatus: number | null;
  error: string | null;
  excerpt: string | null;
  nextAttemptAt: Date | null;
}

/** An attempt's outcome, for the delivery row it claimed. */
export interface RecordedAttempt {
  id: string;
  attempts: number;
  outcome: AttemptOutcome;
  /**
   * What the attempt says about the endpoint's health: `answered` (2xx), `failed` (non-2xx, no
   * answer, a network error), or null (no request was made, or the failure was not the receiver's).
   */
  health: 'answered' | 'failed' | null;
  /** No request was made and none will be for this claim (the endpoint was disabled meanwhile): the claim's count is taken back. */
  notStarted?: true;
  /**
   * The attempt was answered and its slot may pass straight to its endpoint's next due delivery
   * (claimed in the same statement that records this outcome; see `recordAttempts`).
   */
  handoff?: true;
}

/** Port: the delivery queue the worker drains (all tenants). */
export abstract class WebhookDeliveryQueue {
  /**
   * Takes up to `limit` integration events out of the outbox and queues one delivery per enabled
   * endpoint of the event's tenant subscribed to its type, in ONE statement (an event no endpoint
   * wants is dropped). Returns how many events were taken.
   */
  abstract fanOut(limit: number): Promise<number>;
  /**
   * Claims up to `limit` due deliveries in one statement (`FOR UPDATE SKIP LOCKED`: two nodes
   * never claim the same row): counts the attempt and leases the row (`lease_until`, and
   * `next_attempt_at` moved past the lease), so a node that dies mid-attempt leaves the row to be
   * claimed again once the lease has passed. Per endpoint, not in global order: an endpoint gets
   * at most its policy's in-flight cap minus the attempts it has in flight on every node (leases
   * not run out), none while it backs off, and the earliest due of each endpoint come before the
   * second of any. The same statement ends the pending deliveries of disabled or deleted
   * endpoints (`failed`, endpoint_disabled, not counted as an attempt).
   */
  abstract claimDue(limit: number, leaseMs: number, policy: EndpointPolicy): Promise<ClaimedDelivery[]>;
  /**
   * The outcomes of attempts, in one statement: each for the attempt that claimed its row
   * (`attempts` as claimed: a later claim of a presumed-dead attempt wins), releasing its lease,
   * and each endpoint's health (`health`: a 2xx resets its consecutive failures, a failure adds
   * one and sets its backoff from the policy).
   *
   * Handoff: for every recorded attempt marked `handoff`, the same statement claims its
   * endpoint's earliest due delivery as `claimDue` would (leased for `leaseMs`, SKIP LOCKED), if
   * the endpoint is still enabled: the slot the attempt frees is taken again at once, so an
   * endpoint's in-flight count never exceeds what it was, and a busy endpoint's next attempt
   * costs no claim statement of its own. Returns the deliveries claimed so (none without
   * `leaseMs`).
   */
  abstract recordAttempts(attempts: RecordedAttempt[], policy: EndpointPolicy, leaseMs?: number): Promise<ClaimedDelivery[]>;
  /** Pending deliveries (counted up to a bound) and the age of the oldest. */
  abstract backlog(): Promise<OutboxBacklog>;
}
