import { MigrationInterface, QueryRunner } from 'typeorm';

/** `sessions.event_seq` was never used: session_sequence is counted in `event_streams`. */
export class DropSessionEventSeq1764497100000 implements MigrationInterface {
  name = 'DropSessionEventSeq1764497100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions DROP COLUMN event_seq`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions ADD COLUMN event_seq bigint NOT NULL DEFAULT 0`);
  }
}
