import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The integration-event outbox (`common/outbox`): a producer (runs, attachments) inserts a row in
 * the statement that changes its resource, so the event commits with the change; the consumer
 * (webhooks) takes rows oldest first with `FOR UPDATE SKIP LOCKED` and deletes them in the
 * statement that writes what it made of them. The identity column gives the order and costs the
 * writer no id.
 */
export class IntegrationEvents1764497750000 implements MigrationInterface {
  name = 'IntegrationEvents1764497750000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE integration_events (
        id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        tenant_id   text NOT NULL,
        type        text NOT NULL,
        object_id   text NOT NULL,
        payload     jsonb NOT NULL DEFAULT '{}'::jsonb,
        occurred_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE integration_events`);
  }
}
