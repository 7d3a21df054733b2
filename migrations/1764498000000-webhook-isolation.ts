import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhook isolation (CONTRACT section 14, issue 31): the claim counts each endpoint's attempts in
 * flight on every node and spaces out an endpoint that keeps failing.
 * - `webhook_deliveries.lease_until`: set by the claim, cleared by the recorded outcome; a row
 *   with `lease_until > now()` is an attempt in flight (a crashed node's lease simply runs out).
 * - `webhook_endpoints.consecutive_failures` / `backoff_until`: the endpoint's health, written
 *   with the outcomes (a 2xx resets it); see `endpointBackoffSchedule`.
 * - `webhook_endpoints.deleted_at`: a deleted endpoint is kept (invisible to the routes, secret
 *   wiped) so that its pending deliveries can end `failed` (endpoint_disabled) instead of vanishing.
 * - Indexes: pending deliveries by endpoint (the claim walks the endpoints that have some) and
 *   the leased rows by endpoint (the in-flight count).
 */
export class WebhookIsolation1764498000000 implements MigrationInterface {
  name = 'WebhookIsolation1764498000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_deliveries ADD COLUMN lease_until timestamptz(3)`);
    await q.query(`ALTER TABLE webhook_endpoints ADD COLUMN consecutive_failures integer NOT NULL DEFAULT 0`);
    await q.query(`ALTER TABLE webhook_endpoints ADD COLUMN backoff_until timestamptz(3)`);
    await q.query(`ALTER TABLE webhook_endpoints ADD COLUMN deleted_at timestamptz(3)`);
    await q.query(`CREATE INDEX webhook_deliveries_pending_by_endpoint ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE status = 'pending'`);
    await q.query(`CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (endpoint_id, lease_until) WHERE lease_until IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX webhook_deliveries_leased`);
    await q.query(`DROP INDEX webhook_deliveries_pending_by_endpoint`);
    await q.query(`DELETE FROM webhook_endpoints WHERE deleted_at IS NOT NULL`);
    await q.query(`ALTER TABLE webhook_endpoints DROP COLUMN deleted_at`);
    await q.query(`ALTER TABLE webhook_endpoints DROP COLUMN backoff_until`);
    await q.query(`ALTER TABLE webhook_endpoints DROP COLUMN consecutive_failures`);
    await q.query(`ALTER TABLE webhook_deliveries DROP COLUMN lease_until`);
  }
}
