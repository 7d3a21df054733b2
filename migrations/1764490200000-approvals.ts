import { MigrationInterface, QueryRunner } from 'typeorm';

/** Human approvals of risky tool calls. */
export class Approvals1764490200000 implements MigrationInterface {
  name = 'Approvals1764490200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE approvals (
        id            text PRIMARY KEY,
        tenant_id     text NOT NULL,
        subject_id    text NOT NULL,
        session_id    text NOT NULL,
        run_id        text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        tool_call_id  text NOT NULL,
        tool_name     text NOT NULL,
        arguments     jsonb NOT NULL,
        risk          text NOT NULL,
        status        text NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'cancelled')),
        decided_by    text,
        reason        text,
        version       integer NOT NULL,
        created_at    timestamptz(3) NOT NULL,
        decided_at    timestamptz(3),
        expires_at    timestamptz(3) NOT NULL,
        CONSTRAINT approvals_run_call UNIQUE (run_id, tool_call_id)
      )`);
    await q.query(`CREATE INDEX approvals_run_created ON approvals (run_id, created_at, id)`);
    await q.query(`CREATE INDEX approvals_pending_expiry ON approvals (expires_at) WHERE status = 'pending'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE approvals`);
  }
}
