import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Models and money (CONTRACT section 18), the usage module's tables:
 * - `model_spend`: one row per model call a run made (keyed by the turn's message, so a repeated
 *   report is a no-op), with its tokens and estimated cost (USD, exact numeric). Spend limits sum
 *   it per tenant and window; GET /admin/usage groups it by day, agent or model.
 * - `tenant_spend_limits`: a tenant's limit per UTC day or month.
 */
export class ModelSpend1764498400000 implements MigrationInterface {
  name = 'ModelSpend1764498400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE model_spend (
        tenant_id           text NOT NULL,
        run_id              text NOT NULL,
        message_id          text NOT NULL,
        agent_id            text NOT NULL,
        model               text NOT NULL,
        input_tokens        bigint NOT NULL CHECK (input_tokens >= 0),
        cached_input_tokens bigint NOT NULL CHECK (cached_input_tokens >= 0),
        output_tokens       bigint NOT NULL CHECK (output_tokens >= 0),
        reasoning_tokens    bigint NOT NULL CHECK (reasoning_tokens >= 0),
        amount              numeric(30, 15) NOT NULL CHECK (amount >= 0),
        occurred_at         timestamptz(3) NOT NULL,
        PRIMARY KEY (run_id, message_id)
      )`);
    await q.query(`CREATE INDEX model_spend_tenant_time ON model_spend (tenant_id, occurred_at)`);
    await q.query(`
      CREATE TABLE tenant_spend_limits (
        tenant_id  text PRIMARY KEY,
        amount     numeric(30, 15) NOT NULL CHECK (amount >= 0),
        "window"   text NOT NULL CHECK ("window" IN ('day', 'month')),
        updated_at timestamptz(3) NOT NULL
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE tenant_spend_limits`);
    await q.query(`DROP TABLE model_spend`);
  }
}
