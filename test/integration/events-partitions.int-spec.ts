import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { PartitionRunEvents1764498500000 } from '../../migrations/1764498500000-partition-run-events';
import { dataSourceOptions } from '../../src/common/database/database.module';
import { EmbeddedPostgres } from '../../src/common/database/embedded-postgres';
import { runMigrationsLocked } from '../../src/common/database/migrate-locked';
import { EventRetentionSweeper } from '../../src/modules/events/application/event-retention-sweeper';
import { createFreshDatabase, KEYS, startTestApp } from '../helpers/test-app';

const BEFORE_PARTITIONS = MIGRATIONS.slice(0, MIGRATIONS.indexOf(PartitionRunEvents1764498500000));
const RUNS = 1000;
const PER_RUN = 100; // 100k events
const DAY_MS = 24 * 3_600_000;
/** Ids of the contract's shape (a path id of another shape is a 404): the number, zero-padded. */
const pad = (n: number) => String(n).padStart(26, '0');
const runId = (r: number) => `run_${pad(r)}`;
const sessId = (s: number) => `sess_${pad(s)}`;
const evtId = (r: number, k: number) => `evt_${pad(r * PER_RUN + k)}`;
const RECENT = `(substring(run_id FROM 5)::int % 10) >= 5 AND run_id <> '${runId(RUNS)}'`;

/** A digest of every event's identity: id, run, sequences, session and time. */
const DIGEST = `SELECT count(*)::int AS n, md5(string_agg(id || ':' || run_id || ':' || sequence || ':' || session_id || ':' || session_sequence || ':' || (extract(epoch FROM occurred_at) * 1000)::bigint, ',' ORDER BY id)) AS digest FROM run_events`;

/**
 * Partitioning an existing run_events table (issue 30): 100k events written before the migration
 * keep their ids, sequences and times after it; retention then drops a whole partition (once all
 * its runs finished before the cutoff) and what is in the others stays readable by cursor.
 */
describe('run_events partitioned by time (migration and retention)', () => {
  it('keeps 100k events as they were, then drops the expired partition and nothing else', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'agent-api-partitions-'));
    const pg = await createFreshDatabase();
    const embedded = pg ? null : new EmbeddedPostgres(dataDir, 4);
    const url = pg ? pg.url : await embedded!.start();
    let before: { n: number; digest: string };
    let recentDigest: string;
    try {
      const db = new DataSource({ ...dataSourceOptions(url, 2, 240_000), migrations: BEFORE_PARTITIONS });
      await db.initialize();
      await runMigrationsLocked(db);
      // Sessions 0-4: runs that finished 60 days ago; sessions 5-9: runs from now; plus one run
      // from 60 days ago that has not finished (it holds its partition back).
      await db.query(
        `INSERT INTO sessions (id, tenant_id, subject_id, agent_id, agent_version, agent_model, status, revision, created_at, updated_at, last_active_at)
         SELECT 'sess_' || lpad(s::text, 26, '0'), 'tenant_a', 'user_a1', 'support_agent', '1', 'scripted', 'active', 1, now(), now(), now() FROM generate_series(0, 9) s`,
      );
      await db.query(
        `INSERT INTO runs (id, tenant_id, subject_id, session_id, agent_id, agent_version, model, status, user_message_id, usage, limits, version, created_at, updated_at, queue_expires_at)
         SELECT 'run_' || lpad(r::text, 26, '0'), 'tenant_a', 'user_a1', 'sess_' || lpad((r % 10)::text, 26, '0'), 'support_agent', '1', 'scripted', CASE WHEN r = $1 THEN 'running' ELSE 'completed' END, 'msg_' || lpad(r::text, 26, '0'),
                '{"input_tokens":0,"output_tokens":0,"tool_calls":0,"model_calls":0}'::jsonb, '{"max_steps":10,"timeout_ms":300000,"max_total_tokens":null,"max_tool_calls":50}'::jsonb,
                1, now(), now(), now() + interval '1 hour'
           FROM generate_series(0, $1) r`,
        [RUNS],
      );
      // Run r in session r % 10; sessions with an even number hold the old runs (r % 10 < 5 -> old).
      await db.query(`ALTER TABLE run_events DISABLE TRIGGER run_events_audit`); // not the audit trail's subject here
      await db.query(
        `INSERT INTO run_events (id, tenant_id, subject_id, session_id, run_id, sequence, session_sequence, type, data, occurred_at)
         SELECT 'evt_' || lpad((r * $2 + k)::text, 26, '0'), 'tenant_a', 'user_a1', 'sess_' || lpad((r % 10)::text, 26, '0'), 'run_' || lpad(r::text, 26, '0'), k,
                (r / 10) * $2 + k, CASE WHEN k = $2 THEN 'run.finished' ELSE 'message.delta' END, jsonb_build_object('k', k),
                CASE WHEN r % 10 < 5 THEN now() - interval '60 days' ELSE now() END + (r * $2 + k) * interval '1 millisecond'
           FROM generate_series(0, $1 - 1) r, generate_series(1, $2) k`,
        [RUNS, PER_RUN],
      );
      await db.query(
        `INSERT INTO run_events (id, tenant_id, subject_id, session_id, run_id, sequence, session_sequence, type, data, occurred_at)
         VALUES ($3, 'tenant_a', 'user_a1', $4, $1, 1, $2, 'run.started', '{}'::jsonb, now() - interval '59 days')`,
        [runId(RUNS), (RUNS / 10) * PER_RUN + 1, evtId(RUNS, 1), sessId(0)],
      );
      await db.query(`ALTER TABLE run_events ENABLE TRIGGER run_events_audit`);
      await db.query(
        `INSERT INTO event_streams (stream_id, last_sequence)
         SELECT run_id, max(sequence) FROM run_events GROUP BY run_id UNION ALL SELECT session_id, max(session_sequence) FROM run_events GROUP BY session_id`,
      );
      [before] = await db.query(DIGEST);
      expect(before.n).toBe(RUNS * PER_RUN + 1);
      [{ digest: recentDigest }] = await db.query(DIGEST.replace('FROM run_events', `FROM run_events WHERE ${RECENT}`));
      await db.destroy();
      if (embedded) await embedded.stop();
    } catch (err) {
      if (embedded) await embedded.stop().catch(() => undefined);
      if (pg) await pg.drop();
      rmSync(dataDir, { recursive: true, force: true });
      throw err;
    }

    // The app applies the migration at start-up; its 100k-row statements may outlast the 15 s query timeout on a loaded machine.
    const t = await startTestApp({ DATA_DIR: dataDir, WORKER_ENABLED: 'false', DB_QUERY_TIMEOUT_MS: '120000', ...(pg ? { DATABASE_URL: pg.url } : {}) });
    try {
      const db = t.app.get(DataSource);
      const [after] = await db.query(DIGEST);
      expect(after).toEqual(before);
      const [{ partitioned }] = await db.query(`SELECT EXISTS (SELECT 1 FROM pg_partitioned_table WHERE partrelid = 'run_events'::regclass) AS partitioned`);
      expect(partitioned).toBe(true);
      const sweeper = t.app.get(EventRetentionSweeper);
      await sweeper.ensurePartitions();
      const parts: Array<{ name: string; lower: Date | null; upper: Date }> = await db.query(`SELECT name, lower, upper FROM run_events_partition_bounds() ORDER BY upper`);
      expect(parts[0]).toMatchObject({ name: 'run_events_legacy', lower: null });
      expect(parts.length).toBeGreaterThanOrEqual(3); // legacy + the next two periods, at least
      const [{ n: inLegacy }] = await db.query(`SELECT count(*)::int AS n FROM run_events_legacy`);
      expect(inLegacy).toBe(RUNS * PER_RUN + 1);

      // Keyset reads by sequence, through the API, as before the migration.
      const page = await t.call(KEYS.memberA1, 'GET', `/v1/runs/${runId(5)}/events?after=50&limit=10`);
      expect(page.status).toBe(200);
      expect(page.body.data.map((e: any) => [e.event_id, e.sequence])).toEqual(Array.from({ length: 10 }, (_, i) => [evtId(5, 51 + i), 51 + i]));
      const sessionPage = await t.call(KEYS.memberA1, 'GET', `/v1/sessions/${sessId(5)}/events?after=${PER_RUN - 2}&limit=3`);
      expect(sessionPage.body.data.map((e: any) => e.session_sequence)).toEqual([PER_RUN - 1, PER_RUN, PER_RUN + 1]);

      // The recent runs move into the next partition (as if written there); the legacy partition
      // then holds only runs from 60 days ago, one of them not finished.
      await db.query(`UPDATE run_events SET occurred_at = occurred_at + interval '2 days' WHERE ${RECENT}`);
      const later = new Date(Date.now() + 31.5 * DAY_MS); // cutoff: 1.5 days from now, past the legacy partition's end
      await expect(sweeper.sweep(later)).resolves.toBe(0);
      expect((await db.query(`SELECT name FROM run_events_partition_bounds()`)).map((r: { name: string }) => r.name)).toContain('run_events_legacy');

      // The open run finishes: the whole legacy partition goes, with no DELETE of its rows.
      await db.query(
        `INSERT INTO run_events (id, tenant_id, subject_id, session_id, run_id, sequence, session_sequence, type, data, occurred_at)
         VALUES ($3, 'tenant_a', 'user_a1', $4, $1, 2, $2, 'run.finished', '{}'::jsonb, now() - interval '58 days')`,
        [runId(RUNS), (RUNS / 10) * PER_RUN + 2, evtId(RUNS, 2), sessId(0)],
      );
      await expect(sweeper.sweep(later)).resolves.toBe((RUNS / 2) * PER_RUN + 2);
      expect((await db.query(`SELECT name FROM run_events_partition_bounds()`)).map((r: { name: string }) => r.name)).not.toContain('run_events_legacy');

      // The rest is all there, unchanged, and readable; cursors into the dropped part are 410.
      const [rest] = await db.query(DIGEST);
      expect(rest).toEqual({ n: (RUNS / 2) * PER_RUN, digest: expect.any(String) });
      const [{ digest: restShifted }] = await db.query(DIGEST.replace(`occurred_at) * 1000`, `occurred_at - interval '2 days') * 1000`));
      expect(restShifted).toBe(recentDigest);
      const kept = await t.call(KEYS.memberA1, 'GET', `/v1/runs/${runId(995)}/events?after=0&limit=1000`);
      expect(kept.status).toBe(200);
      expect(kept.body.data.map((e: any) => e.sequence)).toEqual(Array.from({ length: PER_RUN }, (_, i) => i + 1));
      for (const old of [runId(0), runId(990)]) {
        const expired = await t.call(KEYS.memberA1, 'GET', `/v1/runs/${old}/events?after=0`);
        expect(expired.status).toBe(410);
        expect(expired.body.error.code).toBe('cursor_expired');
      }
      const sessionExpired = await t.call(KEYS.memberA1, 'GET', `/v1/sessions/${sessId(0)}/events?after=0`);
      expect(sessionExpired.status).toBe(410);
    } finally {
      await t.close();
      if (pg) await pg.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 300_000);
});
