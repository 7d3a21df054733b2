import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Automations and session TTL (issue 26, CONTRACT section 17).
 *
 * - `automations`: a schedule (`cron` with an IANA time zone, or `once` at a time), a target (a new
 *   session of an agent, or an existing session) and the input each invocation delivers.
 *   `next_run_at` is the next slot to fire (null when none: paused, completed); the scheduler on
 *   every node claims due rows with `FOR UPDATE SKIP LOCKED` (`automations_due`).
 * - `automation_invocations`: one row per fired, skipped or failed slot and per manual run;
 *   `UNIQUE (automation_id, slot)` makes a scheduled slot fire at most once however many nodes
 *   race for it (manual runs have no slot). `queued` rows are delivered (a session/run created)
 *   by whichever node locks them first, in the transaction that marks them `started`.
 * - `sessions.ttl_seconds` / `ttl_strategy`: `expires_at` is `last_active_at + ttl_seconds`
 *   (computed on read, so run activity moves it without another write); the sweeper reads
 *   `sessions_ttl_due`.
 */
export class Automations1764498730000 implements MigrationInterface {
  name = 'Automations1764498730000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE automations (
        id text PRIMARY KEY,
        tenant_id text NOT NULL,
        subject_id text NOT NULL,
        owner_role text NOT NULL,
        name text NOT NULL,
        schedule jsonb NOT NULL,
        target jsonb NOT NULL,
        input jsonb NOT NULL,
        status text NOT NULL CHECK (status IN ('active', 'paused', 'completed')),
        metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
        created_by jsonb NOT NULL,
        next_run_at timestamptz,
        revision integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX automations_owner ON automations (tenant_id, subject_id, created_at, id)`);
    await q.query(`CREATE INDEX automations_tenant ON automations (tenant_id, created_at, id)`);
    await q.query(`CREATE INDEX automations_due ON automations (next_run_at) WHERE status = 'active' AND next_run_at IS NOT NULL`);
    await q.query(`
      CREATE TABLE automation_invocations (
        id text PRIMARY KEY,
        automation_id text NOT NULL REFERENCES automations (id) ON DELETE CASCADE,
        tenant_id text NOT NULL,
        source text NOT NULL CHECK (source IN ('schedule', 'manual')),
        slot timestamptz,
        status text NOT NULL CHECK (status IN ('queued', 'started', 'skipped', 'failed')),
        skip_reason text,
        error jsonb,
        run_id text,
        session_id text,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        UNIQUE (automation_id, slot)
      )`);
    await q.query(`CREATE INDEX automation_invocations_list ON automation_invocations (automation_id, created_at, id)`);
    await q.query(`CREATE INDEX automation_invocations_queued ON automation_invocations (created_at) WHERE status = 'queued'`);

    await q.query(`ALTER TABLE sessions ADD COLUMN ttl_seconds integer, ADD COLUMN ttl_strategy text CHECK (ttl_strategy IN ('archive', 'delete'))`);
    await q.query(`CREATE INDEX sessions_ttl_due ON sessions (last_active_at) WHERE ttl_seconds IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS sessions_ttl_due`);
    await q.query(`ALTER TABLE sessions DROP COLUMN IF EXISTS ttl_strategy, DROP COLUMN IF EXISTS ttl_seconds`);
    await q.query(`DROP TABLE IF EXISTS automation_invocations`);
    await q.query(`DROP TABLE IF EXISTS automations`);
  }
}
