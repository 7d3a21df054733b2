/**
 * Issue 29's peer, measured in the same run: B1's shape against the LangGraph.js dev server
 * (`langgraphjs dev`, in-memory, `scripts/peer-langgraph/`: a graph whose scripted model calls
 * `get_time`, then streams 200 characters in 4-character chunks, like B1's `!script`), alternated
 * with this service's B1 (`dist/bench/run.js --only B1`, a child process).
 *
 *   npm ci --prefix scripts/peer-langgraph      # once: the peer's own dependencies
 *   npm run build && npx swc bench test/helpers/fresh-database.ts -d dist --quiet
 *   node dist/bench/peer-langgraph.js [--pairs 3] [--db postgres|embedded] [--quick] [--jobs 10] [--peer-only]
 *
 * The peer's client, per run (50 clients in one closed loop, 5 s warm-up, 20 s measured, as B1):
 * `POST /threads` (B1: `POST /v1/sessions`), then `POST /threads/{id}/runs/stream` with
 * `stream_mode: ["messages-tuple"]` read to its end (B1: `POST .../runs`, then the run's SSE read to
 * `run.finished`). A run counts when its stream ended normally with the tool call, the tool's
 * result and all 50 chunks (52 `messages` events) and no `error` event. Time to first event and to
 * finish are measured from the run's request (the peer's run and stream are one request; B1's are
 * two, so the peer's first event is favoured). `--jobs`: the dev server's `--n-jobs-per-worker`
 * (its default is 10 runs at once). CPU: the dev server's process tree, from /proc.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { createParser, EventSourceMessage } from 'eventsource-parser';
import { cpuMs, DIST } from './lib/server';
import { freePort, load1, log, percentile, pool, round, sleep } from './lib/util';

const ROOT = join(DIST, '..');
const PEER_DIR = join(ROOT, 'scripts', 'peer-langgraph');
const CLI = join(PEER_DIR, 'node_modules', '@langchain', 'langgraph-cli', 'dist', 'cli', 'cli.mjs');
const CLIENTS = 50;

interface Args {
  pairs: number;
  db: 'postgres' | 'embedded';
  quick: boolean;
  jobs: number;
  peerOnly: boolean;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { pairs: 3, db: 'postgres', quick: false, jobs: 10, peerOnly: false };
  for (let i = 0; i < argv.length; i++) {
    const v = argv[i];
    if (v === '--pairs') a.pairs = Number(argv[++i]);
    else if (v === '--db') a.db = argv[++i] as Args['db'];
    else if (v === '--quick') a.quick = true;
    else if (v === '--jobs') a.jobs = Number(argv[++i]);
    else if (v === '--peer-only') a.peerOnly = true;
    else throw new Error(`unknown argument ${v}`);
  }
  return a;
}

/** POSTs `body` as JSON and returns the parsed answer. */
function postJson(base: string, path: string, body: unknown): Promise<any> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(base + path, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if ((res.statusCode ?? 0) >= 300) reject(new Error(`${path}: ${res.statusCode} ${text.slice(0, 200)}`));
        else resolve(JSON.parse(text));
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const agent = new Agent({ keepAlive: true, maxSockets: 256 });

interface PeerRun {
  ok: boolean;
  first: number;
  finished: number;
  began: number;
  at: number;
}

/** One peer run: a thread, then its run's stream read to the end (POST, SSE answer). */
async function peerRun(base: string): Promise<PeerRun> {
  const began = performance.now();
  const thread = await postJson(base, '/threads', {});
  const t0 = performance.now();
  const payload = JSON.stringify({ assistant_id: 'agent', input: { messages: [{ role: 'user', content: 'What time is it?' }] }, stream_mode: ['messages-tuple'] });
  return new Promise<PeerRun>((resolve) => {
    let first = NaN;
    let messages = 0;
    let errored = false;
    const parser = createParser({
      onEvent: (m: EventSourceMessage) => {
        if (Number.isNaN(first)) first = performance.now() - t0;
        if (m.event === 'messages') messages++;
        if (m.event === 'error') errored = true;
      },
    });
    const done = (ok: boolean) => {
      const at = performance.now();
      resolve({ ok, first, finished: at - t0, began, at });
    };
    const req = request(
      `${base}/threads/${thread.thread_id}/runs/stream`,
      { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'content-length': Buffer.byteLength(payload) }, agent: false },
      (res) => {
        res.setEncoding('utf8');
        res.on('data', (c: string) => parser.feed(c));
        res.on('end', () => done(res.statusCode === 200 && !errored && messages === 52));
        res.on('error', () => done(false));
      },
    );
    req.setTimeout(60_000, () => req.destroy());
    req.on('error', () => done(false));
    req.end(payload);
  });
}

/** CPU time (ms) of `pid` and every process below it. */
function treeCpuMs(pid: number): number {
  const children = new Map<number, number[]>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(d)]);
    } catch {
      // gone
    }
  }
  let total = 0;
  const walk = (p: number) => {
    try {
      total += cpuMs(p);
    } catch {
      // gone
    }
    for (const c of children.get(p) ?? []) walk(c);
  };
  walk(pid);
  return total;
}

async function measurePeer(args: Args): Promise<Record<string, number>> {
  const port = await freePort();
  rmSync(join(PEER_DIR, '.langgraph_api'), { recursive: true, force: true }); // its in-memory store's file: every measurement starts empty
  const child = spawn(process.execPath, [CLI, 'dev', '--port', String(port), '--host', '127.0.0.1', '--no-browser', '--no-reload', '--n-jobs-per-worker', String(args.jobs)], {
    cwd: PEER_DIR,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', LANGSMITH_TRACING: 'false', LANGCHAIN_TRACING_V2: 'false', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let tail = '';
  child.stderr!.on('data', (b: Buffer) => (tail = (tail + b.toString('utf8')).slice(-2000)));
  const base = `http://127.0.0.1:${port}`;
  try {
    const t0 = Date.now();
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the LangGraph dev server exited: ${tail}`);
      if (Date.now() - t0 > 90_000) throw new Error(`the LangGraph dev server is not ready in 90 s: ${tail}`);
      try {
        const r = await fetch(`${base}/ok`);
        await r.arrayBuffer();
        if (r.ok) break;
      } catch {
        // not yet
      }
      await sleep(200);
    }
    log(`peer: LangGraph dev server ready (pid ${child.pid}, --n-jobs-per-worker ${args.jobs}) in ${Date.now() - t0} ms`);
    const warmupMs = args.quick ? 3_000 : 5_000;
    const durationMs = args.quick ? 8_000 : 20_000;
    const windowStart = performance.now() + warmupMs;
    const windowEnd = windowStart + durationMs;
    let cpu0 = NaN;
    let cpu1 = NaN;
    const t0Timer = setTimeout(() => (cpu0 = treeCpuMs(child.pid!)), warmupMs);
    const t1Timer = setTimeout(() => (cpu1 = treeCpuMs(child.pid!)), warmupMs + durationMs);
    const results = await pool(CLIENTS, 1_000_000, Date.now() + warmupMs + durationMs, () => peerRun(base).catch(() => ({ ok: false, first: NaN, finished: NaN, began: performance.now(), at: performance.now() })));
    clearTimeout(t0Timer);
    clearTimeout(t1Timer);
    const completed = results.filter((r) => r.ok && r.at >= windowStart && r.at <= windowEnd).length;
    const measured = results.filter((r) => r.began >= windowStart && r.began < windowEnd);
    const ok = measured.filter((r) => r.ok);
    const failed = results.filter((r) => !r.ok).length;
    return {
      runs_per_s: round(completed / (durationMs / 1000), 1),
      first_event_p50_ms: round(percentile(ok.map((r) => r.first), 50), 1),
      first_event_p99_ms: round(percentile(ok.map((r) => r.first), 99), 1),
      finish_p50_ms: round(percentile(ok.map((r) => r.finished), 50), 1),
      finish_p99_ms: round(percentile(ok.map((r) => r.finished), 99), 1),
      cpu_ms_per_run: round((cpu1 - cpu0) / completed, 2),
      failed,
    };
  } finally {
    try {
      process.kill(-child.pid!, 'SIGTERM'); // the CLI and the server it started
    } catch {
      // gone
    }
    await sleep(1500);
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

/** This service's B1 in a child process (the runner as `npm run bench` uses it); its figures from latest.json. */
function measureService(args: Args): Record<string, number> {
  execFileSync(process.execPath, ['--expose-gc', join(DIST, 'bench', 'run.js'), '--only', 'B1', '--db', args.db, ...(args.quick ? ['--quick'] : [])], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, BENCH_B1_CLIENTS: String(CLIENTS) } });
  const latest = JSON.parse(readFileSync(join(ROOT, 'bench', 'results', 'latest.json'), 'utf8'));
  const b1 = latest.results.find((r: any) => r.bench === 'B1' && r.db === args.db);
  const value = (name: string) => b1.figures.find((f: any) => f.name === name)?.value as number;
  return {
    runs_per_s: value(`completed runs/s (${CLIENTS} clients)`),
    first_event_p50_ms: value('time-to-first-event p50'),
    first_event_p99_ms: value('time-to-first-event p99'),
    finish_p50_ms: value('time-to-finish p50'),
    finish_p99_ms: value('time-to-finish p99'),
    cpu_ms_per_run: value('server CPU per completed run'),
    ...(args.db === 'postgres' ? { postgres_cpu_ms_per_run: value('PostgreSQL CPU per completed run (bench database backends)') } : {}),
  };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (!existsSync(CLI)) throw new Error(`the peer is not installed: npm ci --prefix scripts/peer-langgraph`);
  const rows: Array<Record<string, unknown>> = [];
  for (let pair = 1; pair <= args.pairs; pair++) {
    const peer = await measurePeer(args);
    log(`pair ${pair} peer: ${JSON.stringify(peer)} (load ${load1()})`);
    const row: Record<string, unknown> = { pair, peer };
    if (!args.peerOnly) {
      const service = measureService(args);
      log(`pair ${pair} service (${args.db}): ${JSON.stringify(service)} (load ${load1()})`);
      row.service = service;
      row.ratio = round(service.runs_per_s / peer.runs_per_s, 2);
    }
    rows.push(row);
  }
  process.stdout.write(JSON.stringify(rows, null, 2) + '\n');
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
