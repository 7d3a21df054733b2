/** The event types of CONTRACT section 14. */
export const WEBHOOK_EVENT_TYPES = [
  'run.completed',
  'run.failed',
  'run.cancelled',
  'run.expired',
  'run.terminated',
  'run.requires_action',
  'attachment.ready',
  'attachment.rejected',
  'audit.recorded',
  'automation.invocation_failed',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface WebhookEndpoint {
  id: string;
  tenantId: string;
  url: string;
  events: WebhookEventType[];
  description: string | null;
  enabled: boolean;
  /** 1 at creation, incremented by every rotation: names a secret without revealing it. */
  secretVersion: number;
  createdAt: Date;
  updatedAt: Date;
}

export interface WebhookDelivery {
  id: string;
  tenantId: string;
  endpointId: string;
  eventType: WebhookEventType;
  objectId: string;
  status: DeliveryStatus;
  attempts: number;
  lastResponseStatus: number | null;
  lastError: string | null;
  lastResponseExcerpt: string | null;
  nextAttemptAt: Date | null;
  createdAt: Date;
  deliveredAt: Date | null;
}

/**
 * When to try again after `attempts` failed attempts (1 = the first one failed): about
 * `baseMs`, doubling, capped at one hour, with +-20 % jitter; null once the next attempt would
 * fall after `windowMs` from the event (the delivery is then `failed`).
 */
export function nextRetryAt(attempts: number, createdAt: Date, now: Date, baseMs: number, windowMs: number, random = Math.random): Date | null {
  const raw = Math.min(baseMs * 2 ** Math.min(Math.max(attempts - 1, 0), 40), 3_600_000);
  const delay = Math.round(raw * (0.8 + 0.4 * random()));
  const at = new Date(now.getTime() + delay);
  return at.getTime() - createdAt.getTime() > windowMs ? null : at;
}

/**
 * Per-endpoint isolation (CONTRACT section 14, "Isolation"): how many attempts an endpoint may
 * have in flight (on all nodes together) and how long its next attempt waits, given its
 * consecutive failures (an attempt it answered non-2xx or not at all; a 2xx resets the count).
 * Healthy (fewer than `BACKOFF_AFTER_FAILURES` failures in a row): up to `maxInFlight` at once,
 * no wait beyond each delivery's own retry schedule. From then on the endpoint is probed: one
 * attempt at a time, and none before `baseMs * 2^(failures - BACKOFF_AFTER_FAILURES)` (at most
 * `ENDPOINT_BACKOFF_MAX_MS`) has passed since its last failure, so a failing endpoint cannot hog
 * claims, slots or its receiver; its first 2xx makes it healthy again.
 */
export interface EndpointLimits {
  inFlight: number;
  backoffMs: number;
}
export const BACKOFF_AFTER_FAILURES = 3;
export const ENDPOINT_BACKOFF_MAX_MS = 60_000;

export function endpointLimits(consecutiveFailures: number, maxInFlight: number, baseMs: number): EndpointLimits {
  if (consecutiveFailures < BACKOFF_AFTER_FAILURES) return { inFlight: maxInFlight, backoffMs: 0 };
  const exponent = Math.min(consecutiveFailures - BACKOFF_AFTER_FAILURES, 40);
  return { inFlight: 1, backoffMs: Math.min(baseMs * 2 ** exponent, ENDPOINT_BACKOFF_MAX_MS) };
}

/**
 * `endpointLimits` as a table by failure count (index 0, 1, ...; the last entry holds for every
 * count beyond it), which the claim and the outcome statements index: the rule stays here, the
 * SQL only looks it up.
 */
export interface EndpointPolicy {
  inFlightByFailures: number[];
  backoffMsByFailures: number[];
}

export function endpointPolicy(maxInFlight: number, baseMs: number): EndpointPolicy {
  const inFlightByFailures: number[] = [];
  const backoffMsByFailures: number[] = [];
  for (let f = 0; ; f++) {
    const l = endpointLimits(f, maxInFlight, baseMs);
    inFlightByFailures.push(l.inFlight);
    backoffMsByFailures.push(l.backoffMs);
    if (l.backoffMs >= ENDPOINT_BACKOFF_MAX_MS) return { inFlightByFailures, backoffMsByFailures };
  }
}

/** Looks a failure count up in one of the policy's tables (as the SQL does). */
export function byFailures(table: number[], consecutiveFailures: number): number {
  return table[Math.min(Math.max(consecutiveFailures, 0), table.length - 1)];
}
