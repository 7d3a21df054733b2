import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Subagents (CONTRACT 16): a subagent is a child session of the session whose run created it
 * (`parent_session_id`, `parent_run_id`), with a name and a status (`active` | `closed`). Listed
 * by parent (`GET /sessions/{id}/subagents`): the partial index holds only child sessions.
 */
export class Subagents1764498740000 implements MigrationInterface {
  name = 'Subagents1764498740000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions ADD COLUMN parent_session_id text`);
    await q.query(`ALTER TABLE sessions ADD COLUMN parent_run_id text`);
    await q.query(`ALTER TABLE sessions ADD COLUMN subagent_name text`);
    await q.query(`ALTER TABLE sessions ADD COLUMN subagent_status text CHECK (subagent_status IN ('active','closed'))`);
    await q.query(`CREATE INDEX sessions_parent ON sessions (parent_session_id, created_at, id) WHERE parent_session_id IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX sessions_parent`);
    await q.query(`ALTER TABLE sessions DROP COLUMN subagent_status`);
    await q.query(`ALTER TABLE sessions DROP COLUMN subagent_name`);
    await q.query(`ALTER TABLE sessions DROP COLUMN parent_run_id`);
    await q.query(`ALTER TABLE sessions DROP COLUMN parent_session_id`);
  }
}
