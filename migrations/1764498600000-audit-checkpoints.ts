import { MigrationInterface, QueryRunner } from 'typeorm';

/** The role the service's database user is a member of (README, "Production database roles"). */
const APP_DB_ROLE = 'agent_api_app';

/**
 * An audit trail others can check (issue 32, CONTRACT section 10):
 *
 * - `audit_records.mac`: from now on `hash` is the public SHA-256 of (prev_hash + canonical record)
 *   and `mac` the HMAC-SHA256 of `hash` under AUDIT_HMAC_KEY. Records chained before keep their
 *   keyed hash and no mac: `audit_chain_heads.keyed_until` (= each head's position now, 0 for
 *   tenants to come) marks them. The forward-only trigger now keeps `keyed_until` fixed as well. It
 *   is not in the head's tag: moving it gains a writer nothing, a record on either side of it needs
 *   the key (a keyed hash or a mac).
 * - `audit_checkpoints`: signed chain heads, one per (tenant, seq) (the primary key: two nodes
 *   signing one head store one checkpoint); append-only like the records.
 * - `audit_signing_keys`: every public key that signed (a rotation adds one, old ones stay), append-only.
 * - `audit_legal_holds`: tenants whose records are never pruned while `enabled`.
 * - Pruning: `audit_prune(tenant, upto, cutoff, batch)`, SECURITY DEFINER (the service's role has
 *   no DELETE on the records and keeps none), deletes a tenant's oldest records, at most `batch`
 *   per call, only up to a signed checkpoint made before `cutoff` (not in the future), never while
 *   the tenant is on legal hold. The append-only trigger lets exactly those rows through: it allows a
 *   DELETE of rows of the tenant at or below the position the function set for its own transaction.
 */
export class AuditCheckpoints1764498600000 implements MigrationInterface {
  name = 'AuditCheckpoints1764498600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE audit_records ADD COLUMN mac text`);

    await q.query(`ALTER TABLE audit_chain_heads ADD COLUMN keyed_until bigint NOT NULL DEFAULT 0`);
    await q.query(`ALTER TABLE audit_chain_heads DISABLE TRIGGER audit_chain_heads_forward_only`);
    await q.query(`UPDATE audit_chain_heads SET keyed_until = last_seq`);
    await q.query(`ALTER TABLE audit_chain_heads ENABLE TRIGGER audit_chain_heads_forward_only`);
    await q.query(`
      CREATE OR REPLACE FUNCTION audit_chain_heads_forward_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'UPDATE' AND NEW.tenant_id = OLD.tenant_id AND NEW.legacy_until = OLD.legacy_until
           AND NEW.keyed_until = OLD.keyed_until AND NEW.last_seq > OLD.last_seq THEN
          RETURN NEW;
        END IF;
        RAISE EXCEPTION 'audit_chain_heads only moves forward: % is not allowed', TG_OP
          USING ERRCODE = 'insufficient_privilege';
      END
      $$`);
    await q.query(`DROP FUNCTION audit_chain_lock(text, text)`);
    await q.query(`
      CREATE FUNCTION audit_chain_lock(p_tenant text, p_genesis_tag text)
        RETURNS TABLE (last_seq bigint, last_hash text, legacy_until bigint, keyed_until bigint, tag text)
        LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
        INSERT INTO audit_chain_heads (tenant_id, last_seq, last_hash, legacy_until, tag)
          VALUES (p_tenant, 0, repeat('0', 64), 0, p_genesis_tag) ON CONFLICT (tenant_id) DO NOTHING;
        SELECT h.last_seq, h.last_hash, h.legacy_until, h.keyed_until, h.tag FROM audit_chain_heads h WHERE h.tenant_id = p_tenant FOR UPDATE;
      $$`);
    await q.query(`REVOKE EXECUTE ON FUNCTION audit_chain_lock(text, text) FROM PUBLIC`);
    await q.query(`GRANT EXECUTE ON FUNCTION audit_chain_lock(text, text) TO ${APP_DB_ROLE}`);

    await q.query(`
      CREATE TABLE audit_checkpoints (
        tenant_id  text NOT NULL,
        seq        bigint NOT NULL CHECK (seq >= 1),
        hash       text NOT NULL,
        at         timestamptz(3) NOT NULL,
        key_id     text NOT NULL,
        signature  text NOT NULL,
        PRIMARY KEY (tenant_id, seq)
      )`);
    await q.query(`
      CREATE TABLE audit_signing_keys (
        key_id      text PRIMARY KEY,
        public_key  text NOT NULL,
        created_at  timestamptz NOT NULL DEFAULT now()
      )`);
    for (const table of ['audit_checkpoints', 'audit_signing_keys']) {
      await q.query(`CREATE TRIGGER ${table}_append_only BEFORE UPDATE OR DELETE ON ${table} FOR EACH ROW EXECUTE FUNCTION audit_records_refuse_change()`);
      await q.query(`CREATE TRIGGER ${table}_no_truncate BEFORE TRUNCATE ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION audit_records_refuse_change()`);
      await q.query(`REVOKE UPDATE, DELETE, TRUNCATE ON ${table} FROM ${APP_DB_ROLE}`);
      await q.query(`GRANT SELECT, INSERT ON ${table} TO ${APP_DB_ROLE}`);
    }
    await q.query(`
      CREATE TABLE audit_legal_holds (
        tenant_id   text PRIMARY KEY,
        enabled     boolean NOT NULL,
        updated_at  timestamptz NOT NULL DEFAULT now(),
        updated_by  text
      )`);
    await q.query(`REVOKE DELETE, TRUNCATE ON audit_legal_holds FROM ${APP_DB_ROLE}`);
    await q.query(`GRANT SELECT, INSERT, UPDATE ON audit_legal_holds TO ${APP_DB_ROLE}`);

    await q.query(`
      CREATE FUNCTION audit_records_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' AND OLD.tenant_id = current_setting('audit.prune_tenant', true)
           AND OLD.seq <= NULLIF(current_setting('audit.prune_upto', true), '')::bigint THEN
          RETURN OLD;
        END IF;
        RAISE EXCEPTION 'audit_records is append-only: % is not allowed', TG_OP
          USING ERRCODE = 'insufficient_privilege';
      END
      $$`);
    await q.query(`DROP TRIGGER audit_records_append_only ON audit_records`);
    await q.query(`
      CREATE TRIGGER audit_records_append_only BEFORE UPDATE OR DELETE ON audit_records
        FOR EACH ROW EXECUTE FUNCTION audit_records_append_only()`);
    await q.query(`
      CREATE FUNCTION audit_prune(p_tenant text, p_upto bigint, p_cutoff timestamptz, p_batch integer)
        RETURNS bigint
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
      DECLARE
        n bigint;
      BEGIN
        IF p_cutoff > now() THEN
          RAISE EXCEPTION 'audit_prune: the cutoff % is in the future', p_cutoff USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF EXISTS (SELECT 1 FROM audit_legal_holds WHERE tenant_id = p_tenant AND enabled) THEN
          RETURN 0;
        END IF;
        IF NOT EXISTS (SELECT 1 FROM audit_checkpoints WHERE tenant_id = p_tenant AND seq = p_upto AND at < p_cutoff) THEN
          RAISE EXCEPTION 'audit_prune: tenant % has no signed checkpoint at seq % made before %', p_tenant, p_upto, p_cutoff
            USING ERRCODE = 'insufficient_privilege';
        END IF;
        PERFORM set_config('audit.prune_tenant', p_tenant, true);
        PERFORM set_config('audit.prune_upto', p_upto::text, true);
        WITH gone AS (
          DELETE FROM audit_records WHERE tenant_id = p_tenant AND seq IN (
            SELECT seq FROM audit_records WHERE tenant_id = p_tenant AND seq <= p_upto ORDER BY seq LIMIT p_batch)
          RETURNING 1)
        SELECT count(*) INTO n FROM gone;
        PERFORM set_config('audit.prune_tenant', '', true);
        PERFORM set_config('audit.prune_upto', '', true);
        RETURN n;
      END
      $$`);
    await q.query(`REVOKE EXECUTE ON FUNCTION audit_prune(text, bigint, timestamptz, integer) FROM PUBLIC`);
    await q.query(`GRANT EXECUTE ON FUNCTION audit_prune(text, bigint, timestamptz, integer) TO ${APP_DB_ROLE}`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION audit_prune(text, bigint, timestamptz, integer)`);
    await q.query(`DROP TRIGGER audit_records_append_only ON audit_records`);
    await q.query(`
      CREATE TRIGGER audit_records_append_only BEFORE UPDATE OR DELETE ON audit_records
        FOR EACH ROW EXECUTE FUNCTION audit_records_refuse_change()`);
    await q.query(`DROP FUNCTION audit_records_append_only()`);
    await q.query(`DROP TABLE audit_legal_holds`);
    await q.query(`DROP TABLE audit_signing_keys`);
    await q.query(`DROP TABLE audit_checkpoints`);
    await q.query(`DROP FUNCTION audit_chain_lock(text, text)`);
    await q.query(`
      CREATE FUNCTION audit_chain_lock(p_tenant text, p_genesis_tag text)
        RETURNS TABLE (last_seq bigint, last_hash text, legacy_until bigint, tag text)
        LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
        INSERT INTO audit_chain_heads (tenant_id, last_seq, last_hash, legacy_until, tag)
          VALUES (p_tenant, 0, repeat('0', 64), 0, p_genesis_tag) ON CONFLICT (tenant_id) DO NOTHING;
        SELECT h.last_seq, h.last_hash, h.legacy_until, h.tag FROM audit_chain_heads h WHERE h.tenant_id = p_tenant FOR UPDATE;
      $$`);
    await q.query(`REVOKE EXECUTE ON FUNCTION audit_chain_lock(text, text) FROM PUBLIC`);
    await q.query(`GRANT EXECUTE ON FUNCTION audit_chain_lock(text, text) TO ${APP_DB_ROLE}`);
    await q.query(`
      CREATE OR REPLACE FUNCTION audit_chain_heads_forward_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'UPDATE' AND NEW.tenant_id = OLD.tenant_id AND NEW.legacy_until = OLD.legacy_until AND NEW.last_seq > OLD.last_seq THEN
          RETURN NEW;
        END IF;
        RAISE EXCEPTION 'audit_chain_heads only moves forward: % is not allowed', TG_OP
          USING ERRCODE = 'insufficient_privilege';
      END
      $$`);
    await q.query(`ALTER TABLE audit_chain_heads DROP COLUMN keyed_until`);
    await q.query(`ALTER TABLE audit_records DROP COLUMN mac`);
  }
}
