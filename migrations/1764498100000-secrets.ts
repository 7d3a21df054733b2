import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Tenant secrets (CONTRACT section 13, `${secret:NAME}` in tool headers): one row per tenant and
 * name, the current value sealed with AES-256-GCM under SECRETS_KEY (the tenant, name and version
 * authenticated with it). A delete erases the ciphertext and keeps the row (`deleted_at`) so the
 * name's versions keep counting. Names sort byte-wise (`COLLATE "C"`) for the keyset pages.
 */
export class Secrets1764498100000 implements MigrationInterface {
  name = 'Secrets1764498100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE tenant_secrets (
        tenant_id  text NOT NULL,
        name       text COLLATE "C" NOT NULL CHECK (name ~ '^[A-Z][A-Z0-9_]{0,63}$'),
        version    integer NOT NULL CHECK (version >= 1),
        ciphertext bytea,
        created_at timestamptz(3) NOT NULL,
        updated_at timestamptz(3) NOT NULL,
        deleted_at timestamptz(3),
        PRIMARY KEY (tenant_id, name),
        CHECK ((deleted_at IS NULL) = (ciphertext IS NOT NULL))
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE tenant_secrets`);
  }
}
