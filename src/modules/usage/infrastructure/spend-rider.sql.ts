import { Injectable } from '@nestjs/common';
import type { GuardedRider, StatementParams } from '../../../common/database/statement';
import { ModelCallSpend } from '../domain/spend';
import { SpendRider } from '../domain/spend-rider';

/** `model_spend` rows riding on a run step's guarded statement (migration 1764498400000). */
@Injectable()
export class SpendRiderSql extends SpendRider {
  afterGuard(calls: readonly Omit<ModelCallSpend, 'occurredAt'>[]): GuardedRider {
    if (calls.length === 0) throw new Error('a spend rider needs calls');
    return (p: StatementParams, guard) => {
      const rows = calls.map((c) => {
        const v = p.add(c.tenantId, c.runId, c.messageId, c.agentId, c.model, c.inputTokens, c.cachedInputTokens, c.outputTokens, c.reasoningTokens, c.amount);
        return `(${v[0]}::text, ${v[1]}::text, ${v[2]}::text, ${v[3]}::text, ${v[4]}::text, ${v[5]}::bigint, ${v[6]}::bigint, ${v[7]}::bigint, ${v[8]}::bigint, ${v[9]}::numeric)`;
      });
      return `model_spend_insert AS (
        INSERT INTO model_spend (tenant_id, run_id, message_id, agent_id, model, input_tokens, cached_input_tokens, output_tokens, reasoning_tokens, amount, occurred_at)
        SELECT v.*, now() FROM (VALUES ${rows.join(', ')}) v(tenant_id, run_id, message_id, agent_id, model, input_tokens, cached_input_tokens, output_tokens, reasoning_tokens, amount)
         WHERE ${guard.matched}
        ON CONFLICT (run_id, message_id) DO NOTHING)`;
    };
  }
}
