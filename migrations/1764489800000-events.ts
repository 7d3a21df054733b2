import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Run events (the ordered, resumable event log of CONTRACT section 8) and their counters.
 * `event_streams` holds one row per session (`sess_...`) and per run (`run_...`), created lazily;
 * `last_sequence` is taken under the row lock by the writing transaction, so sequence order ==
 * commit order, and `purged_through` records what retention deleted (older cursors: 410).
 */
export class Events1764489800000 implements MigrationInterface {
  name = 'Events1764489800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE run_events (
        id                text PRIMARY KEY,
        tenant_id         text NOT NULL,
        subject_id        text NOT NULL,
        session_id        text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        run_id            text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        sequence          integer NOT NULL CHECK (sequence >= 1),
        session_sequence  bigint NOT NULL CHECK (session_sequence >= 1),
        type              text NOT NULL,
        data              jsonb NOT NULL,
        occurred_at       timestamptz(3) NOT NULL,
        CONSTRAINT run_events_run_sequence UNIQUE (run_id, sequence),
        CONSTRAINT run_events_session_sequence UNIQUE (session_id, session_sequence)
      )`);
    // Retention finds finished runs by their last event.
    await q.query(`CREATE INDEX run_events_finished ON run_events (occurred_at) WHERE type = 'run.finished'`);
    await q.query(`
      CREATE TABLE event_streams (
        stream_id       text PRIMARY KEY,
        last_sequence   bigint NOT NULL DEFAULT 0,
        purged_through  bigint NOT NULL DEFAULT 0
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE event_streams`);
    await q.query(`DROP TABLE run_events`);
  }
}
