import { DomainError } from '../../../common/errors/domain-error';

export const SPEND_WINDOWS = ['day', 'month'] as const;
export type SpendWindow = (typeof SPEND_WINDOWS)[number];

/** A tenant's spend limit (CONTRACT 18): at most `amount` USD per calendar day or month (UTC). */
export interface SpendLimit {
  amount: string;
  window: SpendWindow;
  updatedAt: Date;
}

/** One model call's spend, as a run step commits it (the usage module's own record of it, `SpendRider`). */
export interface ModelCallSpend {
  tenantId: string;
  runId: string;
  /** The turn's message: one record per model call, so a repeated report changes nothing. */
  messageId: string;
  agentId: string;
  model: string;
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
  reasoningTokens: number;
  /** USD decimal string. */
  amount: string;
  occurredAt: Date;
}

/** The window of `now` that a limit counts: [start, resetsAt), UTC calendar days and months. */
export function windowOf(window: SpendWindow, now: Date): { start: Date; resetsAt: Date } {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  if (window === 'month') return { start: new Date(Date.UTC(y, m, 1)), resetsAt: new Date(Date.UTC(y, m + 1, 1)) };
  const d = now.getUTCDate();
  return { start: new Date(Date.UTC(y, m, d)), resetsAt: new Date(Date.UTC(y, m, d + 1)) };
}

export function quotaExceeded(limit: SpendLimit, spent: string, resetsAt: Date, reserved?: string): DomainError {
  return new DomainError('quota_exceeded', `the tenant's spend limit of ${limit.amount} USD per ${limit.window} is reached`, {
    limit: { amount: limit.amount, currency: 'USD', window: limit.window },
    spent: { amount: spent, currency: 'USD' },
    // What model calls in flight hold of the rest (see SpendGate.reserve): absent when nothing is held.
    ...(reserved !== undefined && reserved !== '0' ? { reserved: { amount: reserved, currency: 'USD' } } : {}),
    resets_at: resetsAt.toISOString(),
  });
}

/** Where a tenant stands against its spend limit now: within it, or over it until `resetsAt` (with quota_exceeded's details). */
export type SpendCheck = { exceeded: false } | { exceeded: true; resetsAt: Date; details: Record<string, unknown> };

/**
 * Port for whatever starts or continues runs: refuses new work while the tenant is over its spend
 * limit (429 quota_exceeded); `check` tells a running run to wait (CONTRACT 17) and a waiting one
 * when it may continue.
 */
export abstract class SpendGate {
  abstract assertWithinLimit(tenantId: string): Promise<void>;
  /** Counts the live reservations of calls in flight too: a run waiting for quota resumes only when a call of its could start. */
  abstract check(tenantId: string): Promise<SpendCheck>;
  /** Whether the tenant has a spend limit now (through the short cache): only then is a call's estimate worth computing. */
  abstract hasLimit(tenantId: string): Promise<boolean>;
  /**
   * Before a model call: holds its estimated cost (`amount`) against the limit, unless the
   * window's spend plus the live reservations of other runs already reach it (then `exceeded`
   * and nothing is held). So a call starts only while some of the limit is neither spent nor
   * held, and the total overshoot is at most one call (the last one admitted) as long as no call
   * costs more than its estimate. One reservation per run; it lives `ttlMs` unless extended
   * (`extend`, the run's heartbeat) and goes with `release` once the turn's real cost committed.
   * `reserved` false: nothing to hold (no limit).
   */
  abstract reserve(tenantId: string, call: { runId: string; messageId: string; amount: string; ttlMs: number }): Promise<SpendCheck & { reserved: boolean }>;
  abstract extend(runId: string, ttlMs: number): Promise<void>;
  abstract release(runId: string, messageId: string): Promise<void>;
}
