import { Injectable } from '@nestjs/common';
import { queryRows } from '../../../common/database/sql';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { normalizeAmount } from '../domain/money';
import { ModelCallSpend, SpendLimit, SpendWindow, windowOf } from '../domain/spend';
import { ReserveOutcome, SpendRepository, UsageGroup, UsageRow } from '../domain/spend.repository';

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

  async reserve(tenantId: string, r: { runId: string; messageId: string; amount: string; ttlMs: number; now: Date }): Promise<ReserveOutcome | null> {
    // Two statements in one short transaction: the limit row's lock serialises the tenant's
    // reservations, and the second statement's fresh snapshot sees every reservation committed before it.
    return this.uow.run(async () => {
      const [l] = await this.q(`SELECT amount::text AS amount, "window", updated_at FROM tenant_spend_limits WHERE tenant_id = $1 FOR UPDATE`, [tenantId]);
      if (!l) return null;
      const [row] = await this.q(
        `WITH gone AS (DELETE FROM spend_reservations WHERE tenant_id = $1 AND expires_at <= now() AND run_id <> $3),
              s AS (SELECT (SELECT coalesce(sum(amount), 0) FROM model_spend WHERE tenant_id = $1 AND occurred_at >= $2) AS spent,
                           (SELECT coalesce(sum(amount), 0) FROM spend_reservations WHERE tenant_id = $1 AND expires_at > now() AND run_id <> $3) AS others),
              ins AS (INSERT INTO spend_reservations (run_id, tenant_id, message_id, amount, expires_at)
                      SELECT $3, $1, $7, $4::numeric, now() + make_interval(secs => $5::double precision / 1000) FROM s WHERE s.spent + s.others < $6::numeric
                      ON CONFLICT (run_id) DO UPDATE SET message_id = EXCLUDED.message_id, amount = EXCLUDED.amount, expires_at = EXCLUDED.expires_at
                      RETURNING run_id)
         SELECT s.spent::text AS spent, s.others::text AS others, (SELECT count(*) FROM ins)::int AS reserved FROM s`,
        [tenantId, windowOf(l.window, r.now).start, r.runId, r.amount, r.ttlMs, l.amount, r.messageId],
      );
      const limit = { amount: normalizeAmount(l.amount), window: l.window, updatedAt: date(l.updated_at) };
      return { reserved: Number(row.reserved) > 0, limit, spent: normalizeAmount(row.spent), reservedByOthers: normalizeAmount(row.others) };
    });
  }

  async reservedBy(tenantId: string): Promise<string> {
    const [r] = await this.q(`SELECT coalesce(sum(amount), 0)::text AS amount FROM spend_reservations WHERE tenant_id = $1 AND expires_at > now()`, [tenantId]);
    return normalizeAmount(r?.amount ?? '0');
  }

  async extendReservation(runId: string, ttlMs: number): Promise<void> {
    await this.q(`UPDATE spend_reservations SET expires_at = now() + make_interval(secs => $2::double precision / 1000) WHERE run_id = $1`, [runId, ttlMs]);
  }

  async releaseReservation(runId: string, messageId: string): Promise<void> {
    await this.q(`DELETE FROM spend_reservations WHERE run_id = $1 AND message_id = $2`, [runId, messageId]);
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
