import { MigrationInterface, QueryRunner } from 'typeorm';

/** API keys (hashed), sessions, idempotency records. */
export class Foundation1764489600000 implements MigrationInterface {
  name = 'Foundation1764489600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE api_keys (
        id          text PRIMARY KEY,
        key_hash    text NOT NULL UNIQUE,
        tenant_id   text NOT NULL,
        subject_id  text NOT NULL,
        role        text NOT NULL CHECK (role IN ('member', 'admin')),
        created_at  timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE sessions (
        id              text PRIMARY KEY,
        tenant_id       text NOT NULL,
        subject_id      text NOT NULL,
        agent_id        text NOT NULL,
        agent_version   text NOT NULL,
        agent_model     text NOT NULL,
        title           text,
        status          text NOT NULL CHECK (status IN ('active', 'archived')),
        revision        integer NOT NULL,
        active_run_id   text,
        metadata        jsonb NOT NULL DEFAULT '{}'::jsonb,
        message_seq     integer NOT NULL DEFAULT 0,
        event_seq       bigint NOT NULL DEFAULT 0,
        created_at      timestamptz(3) NOT NULL,
        updated_at      timestamptz(3) NOT NULL,
        last_active_at  timestamptz(3) NOT NULL,
        expires_at      timestamptz(3)
      )`);
    await q.query(`CREATE INDEX sessions_owner_created ON sessions (tenant_id, subject_id, created_at, id)`);
    await q.query(`CREATE INDEX sessions_tenant_created ON sessions (tenant_id, created_at, id)`);
    await q.query(`
      CREATE TABLE idempotency_records (
        id               bigserial PRIMARY KEY,
        tenant_id        text NOT NULL,
        subject_id       text NOT NULL,
        scope            text NOT NULL,
        idem_key         text NOT NULL,
        fingerprint      text NOT NULL,
        state            text NOT NULL CHECK (state IN ('in_progress', 'committed', 'completed')),
        response_status  integer,
        response_body    text,
        response_headers jsonb,
        locked_until     timestamptz(3) NOT NULL,
        created_at       timestamptz(3) NOT NULL DEFAULT now(),
        expires_at       timestamptz(3) NOT NULL,
        CONSTRAINT idempotency_records_scope_key UNIQUE (tenant_id, subject_id, scope, idem_key)
      )`);
    await q.query(`CREATE INDEX idempotency_records_expires ON idempotency_records (expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE idempotency_records`);
    await q.query(`DROP TABLE sessions`);
    await q.query(`DROP TABLE api_keys`);
  }
}
