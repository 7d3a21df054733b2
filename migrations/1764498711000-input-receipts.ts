import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Input receipts (CONTRACT section 7): one row per accepted input (a new run, a steer, an enqueue,
 * an interrupt, an OpenAI input event, an AG-UI request), written in the statement or transaction
 * that accepts the input. `run_id` is the run that took or will take the message (it moves to the
 * follow-up run with `disposition = 'followed_up'`); `taken_at` is set by the commit of the run
 * step that took it. No foreign key to runs or messages (they are written in the same statement,
 * runs.id with a deferred check); the session's deletion takes its receipts.
 */
export class InputReceipts1764498711000 implements MigrationInterface {
  name = 'InputReceipts1764498711000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE inputs (
        id          text PRIMARY KEY,
        tenant_id   text NOT NULL,
        subject_id  text NOT NULL,
        session_id  text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        message_id  text NOT NULL UNIQUE,
        disposition text NOT NULL CHECK (disposition IN ('started', 'steered', 'queued', 'followed_up', 'rejected')),
        run_id      text NOT NULL,
        taken_at    timestamptz(3),
        created_at  timestamptz(3) NOT NULL
      )`);
    await q.query(`CREATE INDEX inputs_session ON inputs (session_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE inputs`);
  }
}
