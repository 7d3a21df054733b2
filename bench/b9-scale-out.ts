/**
 * B9 scale-out (issue 30): 1, 2 and 3 nodes on one PostgreSQL database, cross-node notifications
 * over LISTEN/NOTIFY or over NATS; plus a pgbench microbenchmark of what pg_notify costs a commit.
 *
 *   npm run bench:b9 [-- --quick] [-- --rounds 2] [-- --nodes 1,3]
 *
 * Each configuration: a fresh database, N `node dist/src/main.js` processes (WORKER_CONCURRENCY
 * as by default), and one closed loop of 48 clients: create a session on a random node, start a
 * run there (a tool call and a 50-chunk answer, as B1), read its SSE stream on ANOTHER node (on
 * the same node when N = 1) to `run.finished`. Completed runs/s in the measured window, and
 * commits/s of the database in that window (pg_stat_database.xact_commit). Configurations
 * alternate (ABAB...) so the machine's load drifts over both; the 1-minute load average is
 * printed with each. Results: stdout and bench/results/b9.json.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { api, Api, createSession, startRun } from './lib/api';
import { cpuMs, DIST, freshDatabase, Proc, startProcess } from './lib/server';
import { readSse } from './lib/sse';
import { freePort, load1, log, percentile, pool, round, sleep } from './lib/util';

const PG = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const KEY = 'bench-admin-0001';
const CLIENTS = 48;

interface Args {
  quick: boolean;
  rounds: number;
  nodes: number[];
  pgbenchOnly: boolean;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { quick: false, rounds: 1, nodes: [1, 2, 3], pgbenchOnly: false };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--quick') a.quick = true;
    else if (argv[i] === '--rounds') a.rounds = Number(argv[++i]);
    else if (argv[i] === '--nodes') a.nodes = argv[++i].split(',').map(Number);
    else if (argv[i] === '--pgbench-only') a.pgbenchOnly = true;
  }
  return a;
}

async function startNats(): Promise<{ url: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const child = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  await sleep(300);
  return {
    url: `nats://127.0.0.1:${port}`,
    stop: async () => {
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

async function commits(url: string): Promise<number> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query(`SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`);
    return Number(r.rows[0].xact_commit);
  } finally {
    await c.end();
  }
}

interface Result {
  notifier: 'listen/notify' | 'nats';
  nodes: number;
  runs_per_s: number;
  commits_per_s: number;
  first_event_p50_ms: number;
  first_event_p99_ms: number;
  finish_p99_ms: number;
  /** CPU of all the service's processes in the window, per completed run (less sensitive to a shared machine than runs/s). */
  server_cpu_ms_per_run: number;
  failed: number;
  load1: number;
}

async function measure(notifier: Result['notifier'], n: number, quick: boolean): Promise<Result> {
  const db = await freshDatabase(PG);
  const nats = notifier === 'nats' ? await startNats() : null;
  const procs: Proc[] = [];
  const dirs: string[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const port = await freePort();
      const dir = mkdtempSync(join(tmpdir(), 'agent-api-b9-'));
      dirs.push(dir);
      const env: Record<string, string> = {
        PORT: String(port),
        HOST: '127.0.0.1',
        DATABASE_URL: db.url,
        DATA_DIR: dir,
        API_KEYS: `${KEY}:tenant_bench:user_bench:admin`,
        LOG_LEVEL: 'warn',
        RATE_LIMIT_PER_MINUTE: '10000000',
        SSE_MAX_PER_KEY: '5000',
        NODE_ID: `b9-${i}`,
        AUDIT_HMAC_KEY: 'bench-b9-audit-key-000000000000000000000',
        WEBHOOK_SECRET_KEY: 'bench-b9-webhook-key-0000000000000000000',
        SECRETS_KEY: 'bench-b9-secrets-key-0000000000000000000',
        ...(nats ? { NATS_URL: nats.url } : {}),
      };
      // The first node migrates the fresh database; the others start after it.
      procs.push(await startProcess(`node-${i}`, [join(DIST, 'src', 'main.js')], env, port, '/readyz'));
    }
    const apis: Api[] = procs.map((p) => api(p.url, KEY));
    const turns = [{ tool_calls: [{ name: 'get_time', arguments: {} }] }, { text: 'x'.repeat(200), chunk_size: 4, delay_ms: 0 }];
    const one = async () => {
      const a = Math.floor(Math.random() * n);
      const b = n === 1 ? a : (a + 1 + Math.floor(Math.random() * (n - 1))) % n;
      const sessionId = await createSession(apis[a]);
      const t0 = performance.now();
      const runId = await startRun(apis[a], sessionId, turns);
      let first = NaN;
      let finished = NaN;
      let status = '';
      await readSse(`${procs[b].url}/v1/runs/${runId}/events`, {
        headers: { authorization: `Bearer ${KEY}` },
        timeoutMs: 60_000,
        onFrame: (f) => {
          if (Number.isNaN(first)) first = f.perf - t0;
          if (f.event === 'run.finished') {
            finished = f.perf - t0;
            status = JSON.parse(f.data).data.status;
            return true;
          }
        },
      });
      return { ok: status === 'completed', first, finished, began: t0, at: performance.now() };
    };
    // Long enough that runs finish inside it on a loaded machine (a run took 10 s at load 20).
    const warmupMs = quick ? 5_000 : 10_000;
    const windowMs = quick ? 15_000 : 30_000;
    const start = performance.now();
    const windowStart = start + warmupMs;
    const windowEnd = windowStart + windowMs;
    const load = load1();
    let c0 = NaN;
    let c1 = NaN;
    let cpu0 = NaN;
    let cpu1 = NaN;
    const cpuAll = () => procs.reduce((sum, p) => sum + cpuMs(p.pid), 0);
    const t0 = setTimeout(() => {
      cpu0 = cpuAll();
      void commits(db.url).then((v) => (c0 = v));
    }, warmupMs);
    const t1 = setTimeout(() => {
      cpu1 = cpuAll();
      void commits(db.url).then((v) => (c1 = v));
    }, warmupMs + windowMs);
    const results = await pool(CLIENTS, 1_000_000, Date.now() + warmupMs + windowMs, one);
    clearTimeout(t0);
    clearTimeout(t1);
    await sleep(200);
    const done = results.filter((r) => r.ok && r.at >= windowStart && r.at <= windowEnd);
    const measured = results.filter((r) => r.began >= windowStart && r.began < windowEnd && r.ok);
    return {
      notifier,
      nodes: n,
      runs_per_s: round(done.length / (windowMs / 1000)),
      commits_per_s: round((c1 - c0) / (windowMs / 1000)),
      first_event_p50_ms: round(percentile(measured.map((r) => r.first), 50)),
      first_event_p99_ms: round(percentile(measured.map((r) => r.first), 99)),
      finish_p99_ms: round(percentile(measured.map((r) => r.finished), 99)),
      server_cpu_ms_per_run: round((cpu1 - cpu0) / Math.max(1, done.length)),
      failed: results.filter((r) => !r.ok).length,
      load1: round(load, 2),
    };
  } finally {
    for (const p of procs) await p.stop();
    await nats?.stop();
    await db.drop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}

/**
 * What pg_notify costs a commit (pgbench, 32 clients, 2 threads): `BEGIN; INSERT; COMMIT` with
 * and without `SELECT pg_notify(...)` in the transaction, alternated.
 */
async function pgbenchNotify(quick: boolean, rounds: number): Promise<Array<{ variant: string; tps: number; load1: number }>> {
  const db = await freshDatabase(PG);
  const dir = mkdtempSync(join(tmpdir(), 'agent-api-b9-pgbench-'));
  const out: Array<{ variant: string; tps: number; load1: number }> = [];
  try {
    const c = new Client({ connectionString: db.url });
    await c.connect();
    await c.query(`CREATE TABLE b9 (id bigserial PRIMARY KEY, v text NOT NULL, at timestamptz NOT NULL DEFAULT now())`);
    await c.end();
    writeFileSync(join(dir, 'plain.sql'), `BEGIN;\nINSERT INTO b9 (v) VALUES ('x');\nCOMMIT;\n`);
    writeFileSync(join(dir, 'notify.sql'), `BEGIN;\nINSERT INTO b9 (v) VALUES ('x');\nSELECT pg_notify('b9', 'sess|run|1|1');\nCOMMIT;\n`);
    const u = new URL(db.url);
    for (let r = 0; r < rounds; r++) {
      for (const variant of ['plain', 'notify']) {
        const load = load1();
        const text = execFileSync(
          'pgbench',
          ['-n', '-c', '32', '-j', '2', '-T', quick ? '5' : '10', '-f', join(dir, `${variant}.sql`), '-h', u.hostname, '-p', u.port || '5432', '-U', decodeURIComponent(u.username || 'postgres'), u.pathname.slice(1)],
          { encoding: 'utf8' },
        );
        const tps = Number(/tps = ([\d.]+)/.exec(text)?.[1] ?? NaN);
        log(`pgbench ${variant}: ${tps} tps (load ${load.toFixed(2)})`);
        out.push({ variant: variant === 'plain' ? 'BEGIN; INSERT; COMMIT' : 'BEGIN; INSERT; pg_notify; COMMIT', tps: round(tps), load1: round(load, 2) });
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await db.drop();
  }
  return out;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const micro = await pgbenchNotify(args.quick, Math.max(2, args.rounds));
  const results: Result[] = [];
  if (!args.pgbenchOnly) {
    for (let r = 0; r < args.rounds; r++) {
      for (const n of args.nodes) {
        // Alternate which goes first, so neither always gets the quieter minute.
        const order: Array<Result['notifier']> = (r + n) % 2 === 0 ? ['listen/notify', 'nats'] : ['nats', 'listen/notify'];
        for (const notifier of order) {
          log(`B9: ${n} node(s), ${notifier}, round ${r + 1}`);
          const res = await measure(notifier, n, args.quick);
          log(`B9: ${JSON.stringify(res)}`);
          results.push(res);
        }
      }
    }
  }
  const report = { at: new Date().toISOString(), quick: args.quick, clients: CLIENTS, pgbench: micro, runs: results };
  mkdirSync(join(__dirname, '..', '..', 'bench', 'results'), { recursive: true });
  writeFileSync(join(__dirname, '..', '..', 'bench', 'results', 'b9.json'), JSON.stringify(report, null, 2));
  process.stdout.write(`\n| notifier | nodes | runs/s | commits/s | server CPU ms per run | first event p50 / p99 ms | finish p99 ms | failed | load (1 min) |\n|---|---|---|---|---|---|---|---|---|\n`);
  for (const r of results) {
    process.stdout.write(`| ${r.notifier} | ${r.nodes} | ${r.runs_per_s} | ${r.commits_per_s} | ${r.server_cpu_ms_per_run} | ${r.first_event_p50_ms} / ${r.first_event_p99_ms} | ${r.finish_p99_ms} | ${r.failed} | ${r.load1} |\n`);
  }
  process.stdout.write(`\n| pgbench (32 clients) | tps | load (1 min) |\n|---|---|---|\n`);
  for (const m of micro) process.stdout.write(`| ${m.variant} | ${m.tps} | ${m.load1} |\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
