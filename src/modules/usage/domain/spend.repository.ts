import { ModelCallSpend, SpendLimit, SpendWindow } from './spend';

export const USAGE_GROUPS = ['day', 'agent', 'model'] as const;
export type UsageGroup = (typeof USAGE_GROUPS)[number];

/** One group of GET /admin/usage: a day (`YYYY-MM-DD`, UTC), an agent id or a model id. */
export interface UsageRow {
  key: string;
  runs: number;
  modelCalls: number;
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
  reasoningTokens: number;
  amount: string;
}

/** A reservation's answer: `reserved` false when spend plus reservations are at or over the limit (then nothing was written). */
export interface ReserveOutcome {
  reserved: boolean;
  limit: SpendLimit;
  spent: string;
  /** What the tenant's other live reservations hold. */
  reservedByOthers: string;
}

/** The usage module's tables (model_spend, tenant_spend_limits); nobody else reads or writes them. */
export abstract class SpendRepository {
  /** What the tenant's model calls cost from `from` (inclusive) on, USD decimal string. */
  abstract spentSince(tenantId: string, from: Date): Promise<string>;
  abstract findLimit(tenantId: string): Promise<SpendLimit | null>;
  abstract putLimit(tenantId: string, amount: string, window: SpendWindow): Promise<SpendLimit>;
  abstract deleteLimit(tenantId: string): Promise<boolean>;
  /**
   * Reserves `amount` for the run's next model call unless the window's spend plus the other
   * runs' live reservations already reach the limit (the window of `now`) (checked and written holding the tenant's
   * limit row, so two nodes reserving at once are serialised). A repeated reservation of the same
   * run replaces its own. Null: the tenant has no limit.
   */
  abstract reserve(tenantId: string, r: { runId: string; messageId: string; amount: string; ttlMs: number; now: Date }): Promise<ReserveOutcome | null>;
  /** The live reservations' sum (the run's own left out). */
  abstract reservedBy(tenantId: string): Promise<string>;
  abstract extendReservation(runId: string, ttlMs: number): Promise<void>;
  /** Only the reservation this turn holds (a node that lost the run's lease never drops its successor's). */
  abstract releaseReservation(runId: string, messageId: string): Promise<void>;
  abstract usage(tenantId: string, from: Date, to: Date, groupBy: UsageGroup): Promise<UsageRow[]>;
}
