import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The secret values each run resolved (for the one scrubbing rule): sealed like tenant secrets,
 * keyed by run (and its session), name and a keyed hash of the value, so every version a run resolved stays
 * maskable in what arrives later (a callback, a client tool output) even after a rotation.
 * Rows older than SECRET_USE_RETENTION_DAYS after their last resolution are pruned.
 */
export class RunSecretUses1796650086114 implements MigrationInterface {
  name = 'RunSecretUses1796650086114';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE run_secret_uses (
        run_id text NOT NULL,
        name text NOT NULL,
        value_key text NOT NULL,
        tenant_id text NOT NULL,
        session_id text NOT NULL,
        ciphertext bytea NOT NULL,
        resolved_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (run_id, name, value_key)
      )`);
    await q.query(`CREATE INDEX run_secret_uses_resolved ON run_secret_uses (resolved_at)`);
    await q.query(`CREATE INDEX run_secret_uses_session ON run_secret_uses (session_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE run_secret_uses`);
  }
}
