import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The tamper-evident audit trail: `audit_records` (append-only, hash-chained per tenant) and
 * `audit_chain_heads` (one row per tenant: the chain's last position, locked by every append).
 * Triggers make the database itself refuse UPDATE, DELETE and TRUNCATE on `audit_records`.
 */
export class Audit1764490100000 implements MigrationInterface {
  name = 'Audit1764490100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE audit_records (
        id                text PRIMARY KEY,
        tenant_id         text NOT NULL,
        seq               bigint NOT NULL CHECK (seq >= 1),
        occurred_at       timestamptz(3) NOT NULL,
        actor_subject_id  text,
        actor_role        text,
        actor_key_id      text,
        action            text NOT NULL,
        resource_type     text,
        resource_id       text,
        session_id        text,
        run_id            text,
        request_id        text,
        outcome           text,
        status            integer,
        data              jsonb NOT NULL DEFAULT '{}'::jsonb,
        prev_hash         text NOT NULL,
        hash              text NOT NULL,
        CONSTRAINT audit_records_tenant_seq UNIQUE (tenant_id, seq)
      )`);
    await q.query(`CREATE INDEX audit_records_session ON audit_records (tenant_id, session_id, seq) WHERE session_id IS NOT NULL`);
    await q.query(`CREATE INDEX audit_records_run ON audit_records (tenant_id, run_id, seq) WHERE run_id IS NOT NULL`);
    await q.query(`CREATE INDEX audit_records_actor ON audit_records (tenant_id, actor_subject_id, seq)`);
    await q.query(`CREATE INDEX audit_records_action ON audit_records (tenant_id, action, seq)`);
    await q.query(`CREATE INDEX audit_records_resource ON audit_records (tenant_id, resource_id, seq) WHERE resource_id IS NOT NULL`);
    await q.query(`CREATE INDEX audit_records_time ON audit_records (tenant_id, occurred_at)`);
    await q.query(`
      CREATE TABLE audit_chain_heads (
        tenant_id  text PRIMARY KEY,
        last_seq   bigint NOT NULL DEFAULT 0,
        last_hash  text NOT NULL
      )`);
    await q.query(`
      CREATE FUNCTION audit_records_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'audit_records is append-only: % is not allowed', TG_OP
          USING ERRCODE = 'insufficient_privilege';
      END
      $$`);
    await q.query(`
      CREATE TRIGGER audit_records_append_only
        BEFORE UPDATE OR DELETE ON audit_records
        FOR EACH ROW EXECUTE FUNCTION audit_records_refuse_change()`);
    await q.query(`
      CREATE TRIGGER audit_records_no_truncate
        BEFORE TRUNCATE ON audit_records
        FOR EACH STATEMENT EXECUTE FUNCTION audit_records_refuse_change()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE audit_chain_heads`);
    await q.query(`DROP TABLE audit_records`);
    await q.query(`DROP FUNCTION audit_records_refuse_change()`);
  }
}
