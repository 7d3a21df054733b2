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

/** The usage module's tables (model_spend, tenant_spend_limits); nobody else reads or writes them. */
export abstract class SpendRepository {
  /** What the tenant's model calls cost from `from` (inclusive) on, USD decimal string. */
  abstract spentSince(tenantId: string, from: Date): Promise<string>;
  abstract findLimit(tenantId: string): Promise<SpendLimit | null>;
  abstract putLimit(tenantId: string, amount: string, window: SpendWindow): Promise<SpendLimit>;
  abstract deleteLimit(tenantId: string): Promise<boolean>;
  abstract usage(tenantId: string, from: Date, to: Date, groupBy: UsageGroup): Promise<UsageRow[]>;
}
