import { createHmac } from 'node:crypto';
import { MigrationInterface, QueryRunner } from 'typeorm';
import { migrationContext } from './migration-context';

/** The role the service's database user is a member of (see README, "Production database roles"). */
export const APP_DB_ROLE = 'agent_api_app';

/**
 * A head's tag as `AuditChainKey.headTag` (src/modules/audit/domain/audit-record.ts) makes it, frozen
 * here (a migration imports nothing from src/): HMAC-SHA256 over `audit_chain_head:` and the
 * canonical JSON (keys sorted) of tenant, position, last hash and legacy boundary.
 */
function headTag(key: Buffer, head: { tenantId: string; lastSeq: number; lastHash: string; legacyUntil: number }): string {
  const canonical =
    `{"last_hash":${JSON.stringify(head.lastHash)},"last_seq":${head.lastSeq},` +
    `"legacy_until":${head.legacyUntil},"tenant_id":${JSON.stringify(head.tenantId)}}`;
  return createHmac('sha256', key).update(`audit_chain_head:${canonical}`, 'utf8').digest('hex');
}

/**
 * Tamper evidence against a database writer, and the service's least-privilege role.
 *
 * - `agent_api_app` (NOLOGIN, created when missing): what the service needs, nothing more: DML on
 *   its tables, SELECT + INSERT on `audit_records`, SELECT on `audit_chain_heads` (it moves heads
 *   only through the two functions below), SELECT on `migrations`; no DDL, no TRUNCATE, not the
 *   owner (so it can't disable a trigger) and not a superuser (so it can't set
 *   `session_replication_role`). Default privileges give tables that later migrations create
 *   (as the same owner) DML for it. The login role of DATABASE_URL is made a member of it. On the
 *   embedded database everything stays one role (the grants exist, nothing connects as them).
 * - `audit_chain_heads` gets `legacy_until` (the last record hashed with the old unkeyed
 *   SHA-256; every later record is HMAC-SHA256 with AUDIT_HMAC_KEY) and `tag`, an HMAC over
 *   (tenant, last_seq, last_hash, legacy_until): a head moved back (a deleted tail) needs a tag
 *   only the key can make. The existing heads are tagged here, with the key from the migration
 *   context: the chains as they are now are trusted once, at this upgrade, and never again.
 * - Heads only move forward: a trigger refuses DELETE, TRUNCATE and any UPDATE that does not raise
 *   `last_seq` (or touches tenant or boundary), for every role, the owner's functions included.
 * - `audit_chain_lock(tenant, genesis_tag)` creates the head if missing and locks it (one round trip
 *   where there were two); `audit_chain_advance(tenant, seq, hash, tag)` moves it forward. Both
 *   SECURITY DEFINER, executable by `agent_api_app` only.
 */
export class AuditKeyedChain1764497400000 implements MigrationInterface {
  name = 'AuditKeyedChain1764497400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      DO $$
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${APP_DB_ROLE}') THEN
          BEGIN
            CREATE ROLE ${APP_DB_ROLE} NOLOGIN;
          EXCEPTION
            WHEN duplicate_object OR unique_violation THEN NULL; -- created meanwhile by another database's migration
            WHEN insufficient_privilege THEN
              RAISE EXCEPTION 'the role ${APP_DB_ROLE} does not exist and % may not create it: run CREATE ROLE ${APP_DB_ROLE} NOLOGIN as a role with CREATEROLE first (README: Production database roles)', current_user;
          END;
        END IF;
      END
      $$`);

    // Heads: the legacy boundary and the tag, on every existing head.
    await q.query(`ALTER TABLE audit_chain_heads ADD COLUMN legacy_until bigint NOT NULL DEFAULT 0, ADD COLUMN tag text`);
    const heads: Array<{ tenant_id: string; last_seq: string; last_hash: string }> = await q.query(
      `SELECT tenant_id, last_seq, last_hash FROM audit_chain_heads ORDER BY tenant_id`,
    );
    if (heads.length > 0) {
      const raw = migrationContext().auditHmacKey;
      if (!raw) throw new Error(`${this.name} tags the existing audit chain heads with AUDIT_HMAC_KEY: run it with the key configured (the app and npm run migration:run do)`);
      const tags = heads.map((h) => headTag(raw, { tenantId: h.tenant_id, lastSeq: Number(h.last_seq), lastHash: h.last_hash, legacyUntil: Number(h.last_seq) }));
      await q.query(
        `UPDATE audit_chain_heads h SET legacy_until = h.last_seq, tag = u.tag
           FROM unnest($1::text[], $2::text[]) AS u(tenant_id, tag) WHERE h.tenant_id = u.tenant_id`,
        [heads.map((h) => h.tenant_id), tags],
      );
    }
    await q.query(`ALTER TABLE audit_chain_heads ALTER COLUMN tag SET NOT NULL, ALTER COLUMN legacy_until DROP DEFAULT`);

    await q.query(`
      CREATE FUNCTION audit_chain_heads_forward_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'UPDATE' AND NEW.tenant_id = OLD.tenant_id AND NEW.legacy_until = OLD.legacy_until AND NEW.last_seq > OLD.last_seq THEN
          RETURN NEW;
        END IF;
        RAISE EXCEPTION 'audit_chain_heads only moves forward: % is not allowed', TG_OP
          USING ERRCODE = 'insufficient_privilege';
      END
      $$`);
    await q.query(`
      CREATE TRIGGER audit_chain_heads_forward_only
        BEFORE UPDATE OR DELETE ON audit_chain_heads
        FOR EACH ROW EXECUTE FUNCTION audit_chain_heads_forward_only()`);
    await q.query(`
      CREATE TRIGGER audit_chain_heads_no_truncate
        BEFORE TRUNCATE ON audit_chain_heads
        FOR EACH STATEMENT EXECUTE FUNCTION audit_records_refuse_change()`);

    await q.query(`
      CREATE FUNCTION audit_chain_lock(p_tenant text, p_genesis_tag text)
        RETURNS TABLE (last_seq bigint, last_hash text, legacy_until bigint, tag text)
        LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
        INSERT INTO audit_chain_heads (tenant_id, last_seq, last_hash, legacy_until, tag)
          VALUES (p_tenant, 0, repeat('0', 64), 0, p_genesis_tag) ON CONFLICT (tenant_id) DO NOTHING;
        SELECT h.last_seq, h.last_hash, h.legacy_until, h.tag FROM audit_chain_heads h WHERE h.tenant_id = p_tenant FOR UPDATE;
      $$`);
    await q.query(`
      CREATE FUNCTION audit_chain_advance(p_tenant text, p_seq bigint, p_hash text, p_tag text)
        RETURNS boolean
        LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
        WITH moved AS (
          UPDATE audit_chain_heads SET last_seq = p_seq, last_hash = p_hash, tag = p_tag
           WHERE tenant_id = p_tenant AND last_seq < p_seq RETURNING 1
        )
        SELECT count(*) = 1 FROM moved;
      $$`);

    await q.query(`GRANT USAGE ON SCHEMA public TO ${APP_DB_ROLE}`);
    await q.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${APP_DB_ROLE}`);
    await q.query(`GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO ${APP_DB_ROLE}`);
    await q.query(`REVOKE UPDATE, DELETE, TRUNCATE ON audit_records FROM ${APP_DB_ROLE}`);
    await q.query(`REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON audit_chain_heads FROM ${APP_DB_ROLE}`);
    await q.query(`REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON migrations FROM ${APP_DB_ROLE}`);
    await q.query(`ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO ${APP_DB_ROLE}`);
    await q.query(`ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO ${APP_DB_ROLE}`);
    await q.query(`REVOKE EXECUTE ON FUNCTION audit_chain_lock(text, text), audit_chain_advance(text, bigint, text, text) FROM PUBLIC`);
    await q.query(`GRANT EXECUTE ON FUNCTION audit_chain_lock(text, text), audit_chain_advance(text, bigint, text, text) TO ${APP_DB_ROLE}`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE USAGE, SELECT ON SEQUENCES FROM ${APP_DB_ROLE}`);
    await q.query(`ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE SELECT, INSERT, UPDATE, DELETE ON TABLES FROM ${APP_DB_ROLE}`);
    await q.query(`REVOKE ALL ON ALL TABLES IN SCHEMA public FROM ${APP_DB_ROLE}`);
    await q.query(`REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM ${APP_DB_ROLE}`);
    await q.query(`REVOKE USAGE ON SCHEMA public FROM ${APP_DB_ROLE}`);
    await q.query(`DROP FUNCTION audit_chain_advance(text, bigint, text, text)`);
    await q.query(`DROP FUNCTION audit_chain_lock(text, text)`);
    await q.query(`DROP TRIGGER audit_chain_heads_no_truncate ON audit_chain_heads`);
    await q.query(`DROP TRIGGER audit_chain_heads_forward_only ON audit_chain_heads`);
    await q.query(`DROP FUNCTION audit_chain_heads_forward_only()`);
    await q.query(`ALTER TABLE audit_chain_heads DROP COLUMN tag, DROP COLUMN legacy_until`);
    // The role is cluster-wide (other databases may use it): left in place.
  }
}
