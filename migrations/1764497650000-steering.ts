import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Steering (CONTRACT section 7): `runs.inbox` holds the user messages steered to an active run
 * that it has not taken yet (a column of its own: a steer appends to it without changing the
 * run's version); `sessions.default_concurrency` applies when a run omits `concurrency`.
 */
export class Steering1764497650000 implements MigrationInterface {
  name = 'Steering1764497650000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs ADD COLUMN inbox jsonb NOT NULL DEFAULT '[]'::jsonb`);
    await q.query(
      `ALTER TABLE sessions ADD COLUMN default_concurrency text NOT NULL DEFAULT 'reject'
         CHECK (default_concurrency IN ('reject', 'enqueue', 'steer', 'interrupt'))`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions DROP COLUMN default_concurrency`);
    await q.query(`ALTER TABLE runs DROP COLUMN inbox`);
  }
}
