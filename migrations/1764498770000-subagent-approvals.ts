import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Approvals inside subagents (CONTRACT 16): a parent run's approvals route lists the approvals of
 * its subagents' sessions too, read by session (keyset on created_at, id like by run).
 */
export class SubagentApprovals1764498770000 implements MigrationInterface {
  name = 'SubagentApprovals1764498770000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX approvals_session_created ON approvals (session_id, created_at, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX approvals_session_created`);
  }
}
