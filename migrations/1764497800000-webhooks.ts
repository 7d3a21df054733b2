import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhooks (CONTRACT section 14): endpoints per tenant and the delivery outbox.
 *
 * A delivery row is written in the transaction that changes the run or attachment, by triggers
 * this module owns on `runs` and `attachments` (the precedent is `run_events_audit`): the runs
 * and attachments modules never write webhook tables, and their statements gain no round trip.
 * The triggers are row-level with a `WHEN` clause, so an update that is not a transition into a
 * notified status costs nothing beyond evaluating the clause; a matching one does one indexed
 * INSERT ... SELECT over the tenant's enabled endpoints subscribed to that event type.
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
    await q.query(`CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id)`);

    await q.query(`
      CREATE FUNCTION webhooks_queue(p_tenant text, p_type text, p_object text) RETURNS void LANGUAGE sql AS $fn$
        INSERT INTO webhook_deliveries (id, tenant_id, endpoint_id, event_type, object_id, status, next_attempt_at, created_at, updated_at)
          SELECT 'whevt_' || replace(gen_random_uuid()::text, '-', ''), p_tenant, e.id, p_type, p_object, 'pending', now(), now(), now()
            FROM webhook_endpoints e
           WHERE e.tenant_id = p_tenant AND e.enabled AND p_type = ANY (e.events)
      $fn$`);
    await q.query(`
      CREATE FUNCTION webhooks_queue_run() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        PERFORM webhooks_queue(NEW.tenant_id,
          CASE WHEN NEW.status IN ('waiting_for_approval', 'waiting_for_tool') THEN 'run.requires_action' ELSE 'run.' || NEW.status END,
          NEW.id);
        RETURN NULL;
      END
      $fn$`);
    await q.query(`
      CREATE TRIGGER runs_webhooks AFTER UPDATE OF status ON runs FOR EACH ROW
        WHEN (OLD.status IS DISTINCT FROM NEW.status
              AND NEW.status IN ('completed', 'failed', 'cancelled', 'expired', 'terminated', 'waiting_for_approval', 'waiting_for_tool'))
        EXECUTE FUNCTION webhooks_queue_run()`);
    await q.query(`
      CREATE FUNCTION webhooks_queue_attachment() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        PERFORM webhooks_queue(NEW.tenant_id, 'attachment.' || NEW.status, NEW.id);
        RETURN NULL;
      END
      $fn$`);
    await q.query(`
      CREATE TRIGGER attachments_webhooks AFTER UPDATE OF status ON attachments FOR EACH ROW
        WHEN (OLD.status IS DISTINCT FROM NEW.status AND NEW.status IN ('ready', 'rejected'))
        EXECUTE FUNCTION webhooks_queue_attachment()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER attachments_webhooks ON attachments`);
    await q.query(`DROP TRIGGER runs_webhooks ON runs`);
    await q.query(`DROP FUNCTION webhooks_queue_attachment()`);
    await q.query(`DROP FUNCTION webhooks_queue_run()`);
    await q.query(`DROP FUNCTION webhooks_queue(text, text, text)`);
    await q.query(`DROP TABLE webhook_deliveries`);
    await q.query(`DROP TABLE webhook_endpoints`);
  }
}
