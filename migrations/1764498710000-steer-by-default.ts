import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Steer by default (CONTRACT section 7, seed 002): a session created from now on has
 * `default_concurrency = 'steer'` unless its create says otherwise. Only the column default
 * changes: existing sessions keep the value they have (`reject` for those created before).
 */
export class SteerByDefault1764498710000 implements MigrationInterface {
  name = 'SteerByDefault1764498710000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions ALTER COLUMN default_concurrency SET DEFAULT 'steer'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions ALTER COLUMN default_concurrency SET DEFAULT 'reject'`);
  }
}
