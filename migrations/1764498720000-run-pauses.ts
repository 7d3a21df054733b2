import { MigrationInterface, QueryRunner } from 'typeorm';

const BEFORE = `'queued','running','waiting_for_approval','waiting_for_tool','cancelling','completed','failed','cancelled','expired','terminated'`;

/**
 * Pauses (CONTRACT 17): the waiting statuses of CONTRACT section 7 (`waiting_for_input`,
 * `_callback`, `_timer`, `_quota`, and `_subagents` of section 16), and `runs.wake_at`: when a
 * waiting run is due to be looked at (a timer rings, an input or callback expires, quota is
 * checked again). Due runs are claimed from the partial index with SKIP LOCKED, like the queue.
 */
export class RunPauses1764498720000 implements MigrationInterface {
  name = 'RunPauses1764498720000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs DROP CONSTRAINT runs_status_check`);
    await q.query(
      `ALTER TABLE runs ADD CONSTRAINT runs_status_check CHECK (status IN (${BEFORE},'waiting_for_input','waiting_for_callback','waiting_for_timer','waiting_for_quota','waiting_for_subagents'))`,
    );
    await q.query(`ALTER TABLE runs ADD COLUMN wake_at timestamptz(3)`);
    await q.query(`CREATE INDEX runs_wake_due ON runs (wake_at) WHERE wake_at IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX runs_wake_due`);
    await q.query(`ALTER TABLE runs DROP COLUMN wake_at`);
    await q.query(`ALTER TABLE runs DROP CONSTRAINT runs_status_check`);
    await q.query(`ALTER TABLE runs ADD CONSTRAINT runs_status_check CHECK (status IN (${BEFORE}))`);
  }
}
