import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A response that carries a secret (a webhook endpoint's signing secret, on create and
 * rotate_secret) is no longer stored whole with its Idempotency-Key: the record keeps the body
 * with the secret set to null and, in `response_secret_ref`, a reference the route resolves on a
 * replay (for webhooks: the endpoint id and the secret's version, which rotation increments).
 * Records written before held such secrets in plain text: they are dropped here (a dropped key
 * is a new key, as after the purge).
 */
export class SecretsOutOfIdempotency1764497900000 implements MigrationInterface {
  name = 'SecretsOutOfIdempotency1764497900000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE idempotency_records ADD COLUMN response_secret_ref jsonb`);
    await q.query(`ALTER TABLE webhook_endpoints ADD COLUMN secret_version integer NOT NULL DEFAULT 1`);
    await q.query(`DELETE FROM idempotency_records WHERE response_body LIKE '%"secret":"whsec\\_%'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_endpoints DROP COLUMN secret_version`);
    await q.query(`ALTER TABLE idempotency_records DROP COLUMN response_secret_ref`);
  }
}
