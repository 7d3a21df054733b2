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
