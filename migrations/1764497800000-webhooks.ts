import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhooks (CONTRACT section 14): endpoints per tenant and their deliveries. A delivery row is
 * made by the webhooks worker from an integration event (`integration_events`, written by the
 * runs and attachments modules in the statement that changes the run or attachment): one per
 * enabled endpoint of the tenant subscribed to the event's type, in the statement that takes the
 * event out of the outbox. Nothing here touches another module's tables.
 */
export class Webhooks1764497800000 implements MigrationInterface {
  name = 'Webhooks1764497800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE webhook_endpoints (
        id                text PRIMARY KEY,
        tenant_id         text NOT NULL,
        url               text NOT NULL,
        events            text[] NOT NULL,
        description       text,
        enabled           boolean NOT NULL DEFAULT true,
        secret_ciphertext text NOT NULL,
        created_at        timestamptz(3) NOT NULL,
        updated_at        timestamptz(3) NOT NULL
      )`);
    await q.query(`CREATE INDEX webhook_endpoints_tenant ON webhook_endpoints (tenant_id, id)`);
    await q.query(`
      CREATE TABLE webhook_deliveries (
        id              text PRIMARY KEY,
        tenant_id       text NOT NULL,
        endpoint_id     text NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
        event_type      text NOT NULL,
        object_id       text NOT NULL,
        status          text NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts        integer NOT NULL DEFAULT 0,
        last_response_status integer,
        last_error      text,
        last_response_excerpt text,
        next_attempt_at timestamptz(3),
        created_at      timestamptz(3) NOT NULL,
        updated_at      timestamptz(3) NOT NULL,
        delivered_at    timestamptz(3)
      )`);
    await q.query(`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'`);
    await q.query(`CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE webhook_deliveries`);
    await q.query(`DROP TABLE webhook_endpoints`);
  }
}
