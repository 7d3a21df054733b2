/**
 * Audit export at scale (issue 32): 1,000,000 audit records of one tenant streamed by
 * `GET /v1/admin/audit/export` (ndjson and csv), with the server's RSS sampled every 50 ms and its
 * CPU time read from /proc. The records are inserted with SQL (a realistic ~400-byte request
 * record each, hashes made up: the export does not verify, it streams); `to` is given so the
 * export does not sign (and so re-check) the made-up chain first.
 *
 *   npm run build && npx swc bench -d dist --quiet && node dist/bench/audit-export.js
 *   (BENCH_PG_URL for another server; AUDIT_RECORDS=1000000; FORMATS=ndjson,csv; ROUNDS=2;
 *   SERVER_NODE_OPTIONS for the server's node flags, e.g. --max-old-space-size=160)
 */
import { Client } from 'pg';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuMs, DIST, freshDatabase, rssBytes, startProcess } from './lib/server';
import { freePort, load1, log } from './lib/util';

const N = Number(process.env.AUDIT_RECORDS ?? 1_000_000);
const FORMATS = (process.env.FORMATS ?? 'ndjson,csv').split(',');
const ROUNDS = Number(process.env.ROUNDS ?? 2);
const KEY = 'bench-audit-key-0001';
const MiB = 1024 * 1024;

async function main(): Promise<void> {
  const base = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const db = await freshDatabase(base);
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-audit-'));
  const port = await freePort();
  const server = await startProcess(
    'server',
    [join(DIST, 'src', 'main.js')],
    { PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: db.url, DATA_DIR: dataDir, LOG_LEVEL: 'warn', API_KEYS: `${KEY}:tenant_bench:admin_bench:admin`, RATE_LIMIT_PER_MINUTE: '10000000', ...(process.env.SERVER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.SERVER_NODE_OPTIONS } : {}) },
    port,
    '/readyz',
  );
  const results: Array<Record<string, unknown>> = [];
  try {
    const pg = new Client({ connectionString: db.url });
    await pg.connect();
    const t0 = Date.now();
    for (let from = 1; from <= N; from += 100_000) {
      const to = Math.min(N, from + 99_999);
      await pg.query(
        `INSERT INTO audit_records (id, tenant_id, seq, occurred_at, actor_subject_id, actor_role, actor_key_id, action, resource_type, resource_id,
                                    session_id, run_id, request_id, outcome, status, data, prev_hash, hash, mac)
         SELECT 'aud_bench' || lpad(s::text, 10, '0'), 'tenant_bench', s, timestamptz '2025-01-01' + s * interval '1 second', 'user_' || (s % 97), 'member', 'key_bench',
                'POST /v1/sessions/:id/runs', 'run', 'run_bench' || s, 'sess_bench' || (s / 10), 'run_bench' || s, 'req_bench' || s, 'ok', 202,
                jsonb_build_object('request', jsonb_build_object('method', 'POST', 'url', '/v1/sessions/sess_bench' || (s / 10) || '/runs', 'body',
                  jsonb_build_object('input', jsonb_build_array(jsonb_build_object('role', 'user', 'content', 'Where is my order O-' || s || '? It was due last week.')))),
                  'response', jsonb_build_object('status', 202, 'run_id', 'run_bench' || s)),
                md5((s - 1)::text) || md5((s - 1)::text), md5(s::text) || md5(s::text), md5('m' || s) || md5('m' || s)
           FROM generate_series($1::bigint, $2::bigint) s`,
        [from, to],
      );
    }
    await pg.query(`INSERT INTO audit_chain_heads (tenant_id, last_seq, last_hash, legacy_until, keyed_until, tag) VALUES ('tenant_bench', $1, $2, 0, 0, 'bench')`, [
      N,
      'x'.repeat(64),
    ]);
    await pg.query(`ANALYZE audit_records`);
    await pg.end();
    log(`inserted ${N} audit records in ${Date.now() - t0} ms`);

    for (let round = 1; round <= ROUNDS; round++) {
      for (const format of FORMATS) {
        // The baseline is taken once the server is idle (its audit checkpointer and drains have
        // looked at the inserted records): background work before the export is not the export's.
        const idle = await settle(server.pid);
        log(`server idle after ${idle} ms (RSS ${(rssBytes(server.pid) / MiB).toFixed(1)} MiB)`);
        const rssBefore = rssBytes(server.pid);
        const cpuBefore = cpuMs(server.pid);
        let rssMax = rssBefore;
        const sampler = setInterval(() => {
          try {
            rssMax = Math.max(rssMax, rssBytes(server.pid));
          } catch {
            // the server is gone: the request fails below
          }
        }, 50);
        const started = Date.now();
        const res = await fetch(`${server.url}/v1/admin/audit/export?format=${format}&to=2100-01-01T00:00:00Z`, { headers: { authorization: `Bearer ${KEY}` } });
        if (res.status !== 200) throw new Error(`export answered ${res.status}: ${await res.text()}`);
        let bytes = 0;
        let newlines = 0;
        let firstByteMs = -1;
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          if (firstByteMs < 0) firstByteMs = Date.now() - started;
          bytes += chunk.byteLength;
          for (let i = 0; i < chunk.length; i++) if (chunk[i] === 10) newlines++;
        }
        const ms = Date.now() - started;
        clearInterval(sampler);
        const cpu = cpuMs(server.pid) - cpuBefore;
        // ndjson: header + records + end; csv: header row + records (CRLF ends each row).
        const rows = format === 'ndjson' ? newlines - 2 : newlines - 1;
        if (rows !== N) throw new Error(`${format}: ${rows} records streamed, ${N} expected`);
        const r = {
          round,
          format,
          records: rows,
          seconds: +(ms / 1000).toFixed(2),
          records_per_s: Math.round(rows / (ms / 1000)),
          mib: +(bytes / MiB).toFixed(1),
          first_byte_ms: firstByteMs,
          server_cpu_s: +(cpu / 1000).toFixed(2),
          server_cpu_us_per_record: +((cpu * 1000) / rows).toFixed(2),
          rss_before_mib: +(rssBefore / MiB).toFixed(1),
          rss_max_mib: +(rssMax / MiB).toFixed(1),
          rss_growth_mib: +((rssMax - rssBefore) / MiB).toFixed(1),
          load1: load1(),
        };
        log(JSON.stringify(r));
        results.push(r);
      }
    }
  } finally {
    await server.stop();
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  console.log(JSON.stringify(results, null, 2));
}

/** Waits until the process used < 20 ms of CPU in each of 4 consecutive 250 ms windows (at most 60 s); returns the wait. */
async function settle(pid: number): Promise<number> {
  const t0 = Date.now();
  let quiet = 0;
  let last = cpuMs(pid);
  while (quiet < 4 && Date.now() - t0 < 60_000) {
    await new Promise((r) => setTimeout(r, 250));
    const now = cpuMs(pid);
    quiet = now - last < 20 ? quiet + 1 : 0;
    last = now;
  }
  return Date.now() - t0;
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
