import { MigrationInterface, QueryRunner } from 'typeorm';

/** Runs (with their lease and saved loop state) and session messages. */
export class RunsMessages1764489700000 implements MigrationInterface {
  name = 'RunsMessages1764489700000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE runs (
        id                 text PRIMARY KEY,
        tenant_id          text NOT NULL,
        subject_id         text NOT NULL,
        session_id         text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        agent_id           text NOT NULL,
        agent_version      text NOT NULL,
        model              text NOT NULL,
        status             text NOT NULL CHECK (status IN ('queued','running','waiting_for_approval','waiting_for_tool','cancelling','completed','failed','cancelled','expired','terminated')),
        termination_reason text,
        error              jsonb,
        user_message_id    text NOT NULL,
        final_message_id   text,
        step_count         integer NOT NULL DEFAULT 0,
        usage              jsonb NOT NULL,
        limits             jsonb NOT NULL,
        metadata           jsonb NOT NULL DEFAULT '{}'::jsonb,
        state              jsonb NOT NULL DEFAULT '{}'::jsonb,
        version            integer NOT NULL,
        lease_owner        text,
        lease_expires_at   timestamptz(3),
        cancel_requested_at timestamptz(3),
        created_at         timestamptz(3) NOT NULL,
        updated_at         timestamptz(3) NOT NULL,
        started_at         timestamptz(3),
        finished_at        timestamptz(3),
        queue_expires_at   timestamptz(3) NOT NULL
      )`);
    await q.query(`CREATE INDEX runs_session_created ON runs (session_id, created_at, id)`);
    await q.query(`CREATE INDEX runs_owner_created ON runs (tenant_id, subject_id, created_at, id)`);
    await q.query(`CREATE INDEX runs_claimable ON runs (created_at, id) WHERE status IN ('queued', 'running', 'cancelling')`);
    await q.query(`CREATE INDEX runs_active_by_session ON runs (session_id, created_at) WHERE status NOT IN ('completed','failed','cancelled','expired','terminated')`);
    await q.query(`
      CREATE TABLE messages (
        id          text PRIMARY KEY,
        tenant_id   text NOT NULL,
        subject_id  text NOT NULL,
        session_id  text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        run_id      text REFERENCES runs(id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
        role        text NOT NULL CHECK (role IN ('user','assistant','tool','system')),
        status      text NOT NULL CHECK (status IN ('pending','streaming','completed','failed','cancelled')),
        sequence    integer NOT NULL,
        content     jsonb NOT NULL,
        metadata    jsonb NOT NULL DEFAULT '{}'::jsonb,
        created_at  timestamptz(3) NOT NULL,
        updated_at  timestamptz(3) NOT NULL,
        CONSTRAINT messages_session_sequence UNIQUE (session_id, sequence)
      )`);
    await q.query(`CREATE INDEX messages_run ON messages (run_id, sequence)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE messages`);
    await q.query(`DROP TABLE runs`);
  }
}
