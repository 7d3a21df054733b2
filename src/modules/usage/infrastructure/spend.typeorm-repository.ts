import { Injectable } from '@nestjs/common';
import { queryRows } from '../../../common/database/sql';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { normalizeAmount } from '../domain/money';
import { ModelCallSpend, SpendLimit, SpendWindow } from '../domain/spend';
import { SpendRepository, UsageGroup, UsageRow } from '../domain/spend.repository';

type Row = Record<string, any>;
const date = (v: unknown): Date => (v instanceof Date ? v : new Date(String(v)));

const GROUP_KEY: Record<UsageGroup, string> = {
  day: `to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
  agent: 'agent_id',
  model: 'model',
};

/** model_spend and tenant_spend_limits (migration 1764498400000); amounts are numeric in SQL and decimal strings here. */
@Injectable()
export class SpendTypeormRepository extends SpendRepository {
  constructor(private readonly uow: UnitOfWork) {
    super();
  }

  private q(sql: string, params: unknown[] = []): Promise<Row[]> {
    return queryRows<Row>(this.uow.manager, sql, params);
  }

  async spentSince(tenantId: string, from: Date): Promise<string> {
    const [r] = await this.q(`SELECT coalesce(sum(amount), 0)::text AS amount FROM model_spend WHERE tenant_id = $1 AND occurred_at >= $2`, [tenantId, from]);
    return normalizeAmount(r?.amount ?? '0');
  }

  async findLimit(tenantId: string): Promise<SpendLimit | null> {
    const [r] = await this.q(`SELECT amount::text AS amount, "window", updated_at FROM tenant_spend_limits WHERE tenant_id = $1`, [tenantId]);
    return r ? { amount: normalizeAmount(r.amount), window: r.window, updatedAt: date(r.updated_at) } : null;
  }

  async putLimit(tenantId: string, amount: string, window: SpendWindow): Promise<SpendLimit> {
    const [r] = await this.q(
      `INSERT INTO tenant_spend_limits (tenant_id, amount, "window", updated_at) VALUES ($1, $2::numeric, $3, now())
       ON CONFLICT (tenant_id) DO UPDATE SET amount = EXCLUDED.amount, "window" = EXCLUDED."window", updated_at = EXCLUDED.updated_at
       RETURNING amount::text AS amount, "window", updated_at`,
      [tenantId, amount, window],
    );
    return { amount: normalizeAmount(r.amount), window: r.window, updatedAt: date(r.updated_at) };
  }

  async deleteLimit(tenantId: string): Promise<boolean> {
    const rows = await this.q(`DELETE FROM tenant_spend_limits WHERE tenant_id = $1 RETURNING tenant_id`, [tenantId]);
    return rows.length > 0;
  }

  async usage(tenantId: string, from: Date, to: Date, groupBy: UsageGroup): Promise<UsageRow[]> {
    const key = GROUP_KEY[groupBy];
    const rows = await this.q(
      `SELECT ${key} AS key, count(DISTINCT run_id) AS runs, count(*) AS calls,
              coalesce(sum(input_tokens), 0) AS input, coalesce(sum(cached_input_tokens), 0) AS cached,
              coalesce(sum(output_tokens), 0) AS output, coalesce(sum(reasoning_tokens), 0) AS reasoning,
              coalesce(sum(amount), 0)::text AS amount
         FROM model_spend
        WHERE tenant_id = $1 AND occurred_at >= $2 AND occurred_at < $3
        GROUP BY 1 ORDER BY 1`,
      [tenantId, from, to],
    );
    return rows.map((r) => ({
      key: String(r.key),
      runs: Number(r.runs),
      modelCalls: Number(r.calls),
      inputTokens: Number(r.input),
      cachedInputTokens: Number(r.cached),
      outputTokens: Number(r.output),
      reasoningTokens: Number(r.reasoning),
      amount: normalizeAmount(r.amount),
    }));
  }
}
