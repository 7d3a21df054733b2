import autocannon from 'autocannon';
import { Client } from 'pg';
import { Api, createSession, startRun } from './lib/api';
import { cpuMs, dbBackendsCpuMs, Proc, rssBytes } from './lib/server';
import { readSse, SseFrame } from './lib/sse';
import { log, percentile, pool, round, sleep, withTimeout } from './lib/util';

export interface Ctx {
  db: 'postgres' | 'embedded';
  app: Proc;
  api: Api;
  /** A URL the runner can use to seed rows (PostgreSQL, or the embedded server's socket). */
  dbUrl: string;
  quick: boolean;
  startBare: () => Promise<Proc>;
  /** `--model`: B1's runs name this model (an OpenAI-compatible fake on loopback) instead of the scripted one. */
  model?: string;
}

/** One measured figure: value, target (if any), and whether it meets it. */
export interface Figure {
  name: string;
  value: number;
  unit: string;
  target?: { op: '>=' | '<='; value: number };
  baseline?: { name: string; value: number };
  ok?: boolean;
}

export interface BenchResult {
  bench: string;
  db: string;
  load1: number;
  figures: Figure[];
  notes: string[];
}

export function fig(name: string, value: number, unit: string, target?: Figure['target'], baseline?: Figure['baseline']): Figure {
  const f: Figure = { name, value: round(value, value < 10 ? 2 : 1), unit };
  if (target) {
    f.target = target;
    f.ok = target.op === '>=' ? value >= target.value : value <= target.value;
  }
  if (baseline) f.baseline = baseline;
  return f;
}

const sseUrl = (ctx: Ctx, path: string) => ctx.app.url + path;
const auth = (ctx: Ctx) => ({ authorization: `Bearer ${ctx.api.key}` });

export function answer(n: number): string {
  const words = 'the quick brown fox jumps over the lazy dog while streaming deltas ';
  return words.repeat(Math.ceil(n / words.length)).slice(0, n);
}

// ---- B1 run throughput -------------------------------------------------------------------

/** One B1 run (session, run with a tool call and a 50-chunk answer, its stream read to the end). */
function b1Run(ctx: Ctx) {
  const text = answer(200); // 50 chunks of 4 characters
  const turns = [{ tool_calls: [{ name: 'get_time', arguments: {} }] }, { text, chunk_size: 4, delay_ms: 0 }];
  return async () => {
    const began = performance.now();
    const sessionId = await createSession(ctx.api);
    const t0 = performance.now();
    const runId = await startRun(ctx.api, sessionId, turns, ctx.model ? { model: ctx.model } : {});
    let first = NaN;
    let finished = NaN;
    let status = '';
    const r = await readSse(sseUrl(ctx, `/v1/runs/${runId}/events`), {
      headers: auth(ctx),
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
    return { ok: status === 'completed', first, finished, end: r.end, began, at: performance.now() };
  };
}

/**
 * One closed loop of `clients` that never stop between the warm-up and the measurement (B1, B7):
 * runs `one` until `warmupMs + durationMs` have passed, and reads the service's CPU time and (on
 * PostgreSQL) the bench database backends' at the window's two ends.
 */
export async function closedLoop<R>(
  ctx: Ctx,
  clients: number,
  warmupMs: number,
  durationMs: number,
  one: () => Promise<R>,
): Promise<{ results: R[]; cpuMs: number; dbCpuMs: number; windowStart: number; windowEnd: number }> {
  const windowStart = performance.now() + warmupMs;
  const windowEnd = windowStart + durationMs;
  let cpu0 = NaN;
  let cpu1 = NaN;
  // PostgreSQL's share (the bench database's backends): the service's own CPU does not show the
  // cost of its statements. Embedded: the database runs in the service's process.
  const dbCpu = (): Promise<number> => (ctx.db === 'postgres' ? dbBackendsCpuMs(ctx.dbUrl) : Promise.resolve(0));
  let db0: Promise<number> = Promise.resolve(NaN);
  let db1: Promise<number> = Promise.resolve(NaN);
  const t0Timer = setTimeout(() => {
    cpu0 = cpuMs(ctx.app.pid);
    db0 = dbCpu();
  }, warmupMs);
  const t1Timer = setTimeout(() => {
    cpu1 = cpuMs(ctx.app.pid);
    db1 = dbCpu();
  }, warmupMs + durationMs);
  const results = await pool(clients, 1_000_000, Date.now() + warmupMs + durationMs, one);
  clearTimeout(t0Timer);
  clearTimeout(t1Timer);
  return { results, cpuMs: cpu1 - cpu0, dbCpuMs: (await db1) - (await db0), windowStart, windowEnd };
}

export async function b1(ctx: Ctx): Promise<Omit<BenchResult, 'load1'>> {
  // BENCH_B1_CLIENTS: the same loop at another concurrency (how time to first event grows with load).
  const clients = Number(process.env.BENCH_B1_CLIENTS ?? 50);
  const durationMs = ctx.quick ? 8_000 : 20_000;
  const one = b1Run(ctx);

  // One closed loop: the clients never stop between the warm-up and the measurement (a loop that
  // drained and restarted would start all 50 clients in the same millisecond, a burst that no
  // steady load has: it made every sample above 250 ms of a 15 s run, all in its first 1.6 s).
  // Runs that start during the warm-up are not counted; runs/s = runs completed inside the window.
  const warmupMs = ctx.quick ? 3_000 : 5_000;
  log(`B1: ${clients} clients in one closed loop, ${warmupMs} ms warm-up (not counted), then ${durationMs} ms measured`);
  const { results, cpuMs: cpuTotal, dbCpuMs, windowStart, windowEnd } = await closedLoop(ctx, clients, warmupMs, durationMs, one);
  const cpu = cpuTotal / durationMs;
  const completedInWindow = results.filter((r) => r.ok && r.at >= windowStart && r.at <= windowEnd).length;
  const rps = completedInWindow / (durationMs / 1000);
  const measured = results.filter((r) => r.began >= windowStart && r.began < windowEnd);
  const ok = measured.filter((r) => r.ok);
  return {
    bench: 'B1',
    db: ctx.db,
    figures: [
      fig(`completed runs/s (${clients} clients)`, rps, 'runs/s', { op: '>=', value: 100 }),
      fig('time-to-first-event p50', percentile(ok.map((r) => r.first), 50), 'ms'),
      fig('time-to-first-event p99', percentile(ok.map((r) => r.first), 99), 'ms', { op: '<=', value: 100 }),
      fig('time-to-finish p50', percentile(ok.map((r) => r.finished), 50), 'ms'),
      fig('time-to-finish p99', percentile(ok.map((r) => r.finished), 99), 'ms'),
      fig('server CPU', cpu, 'cores'),
      // Per completed run: steadier than runs/s on a shared machine (other processes take wall time, not this CPU).
      fig('server CPU per completed run', cpuTotal / completedInWindow, 'ms'),
      ...(ctx.db === 'postgres' ? [fig('PostgreSQL CPU per completed run (bench database backends)', dbCpuMs / completedInWindow, 'ms')] : []),
    ],
    notes: [
      `${completedInWindow} runs completed in the ${durationMs / 1000} s window; ${ok.length}/${measured.length} runs started in it completed (latencies are theirs); ${results.length - measured.length} more ran in the warm-up and at the end`,
    ],
  };
}

// ---- B1W: B1's work per run, a fixed count --------------------------------------------------

/**
 * B1's runs as a fixed amount of work, for A/B on a shared machine: after a warm-up, `count` runs
 * (20 clients), and the CPU time of the service (and of the bench database's PostgreSQL backends)
 * from an idle start to an idle end (1 s settled on each side), divided by the runs. Other
 * processes take wall time from it, not this CPU; its idle loops (pollers) are counted over a
 * longer window when the machine is loaded, so compare builds measured alternately.
 */
export async function b1w(ctx: Ctx): Promise<Omit<BenchResult, 'load1'>> {
  const count = ctx.quick ? 200 : 600;
  // BENCH_B1W_CLIENTS: the same fixed work at another concurrency (B1's 50: does a run cost more when more run at once?).
  const clients = Number(process.env.BENCH_B1W_CLIENTS ?? 20);
  const one = b1Run(ctx);
  await pool(clients, 60, Date.now() + 120_000, one);
  await sleep(1_000);
  const dbCpu = (): Promise<number> => (ctx.db === 'postgres' ? dbBackendsCpuMs(ctx.dbUrl) : Promise.resolve(0));
  const cpu0 = cpuMs(ctx.app.pid);
  const db0 = await dbCpu();
  const t0 = performance.now();
  const results = await pool(clients, count, Date.now() + 600_000, one);
  const wallMs = performance.now() - t0;
  await sleep(1_000);
  const cpu = cpuMs(ctx.app.pid) - cpu0;
  const db = (await dbCpu()) - db0;
  const ok = results.filter((r) => r.ok).length;
  // Rows written per run (all runs, warm-up included): a change that writes more shows here first.
  const c = new Client({ connectionString: ctx.dbUrl });
  await c.connect();
  const rowsPerRun: string[] = [];
  try {
    const [{ n: runs }] = (await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM runs`)).rows;
    for (const table of ['run_events', 'audit_records', 'integration_events', 'idempotency_records', 'messages']) {
      const [{ n }] = (await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows;
      rowsPerRun.push(`${table} ${round(n / runs, 2)}`);
    }
  } finally {
    await c.end();
  }
  return {
    bench: 'B1W',
    db: ctx.db,
    figures: [
      fig('server CPU per completed run', cpu / ok, 'ms'),
      ...(ctx.db === 'postgres' ? [fig('PostgreSQL CPU per completed run (bench database backends)', db / ok, 'ms')] : []),
      fig(`runs/s (${clients} clients, wall clock)`, ok / (wallMs / 1000), 'runs/s'),
    ],
    notes: [`${ok}/${results.length} runs completed; ${Math.round(wallMs)} ms; CPU counted from 1 s before the first to 1 s after the last`, `rows per run: ${rowsPerRun.join(', ')}`],
  };
}

// ---- B2 streaming ------------------------------------------------------------------------

export async function b2(ctx: Ctx): Promise<Omit<BenchResult, 'load1'>> {
  const size = 200_000;
  const text = answer(size);
  const rounds = ctx.quick ? 1 : 3;
  const times: number[] = [];
  let rows = 0;
  let deltas = 0;
  for (let i = 0; i < rounds; i++) {
    const sessionId = await createSession(ctx.api);
    const t0 = performance.now();
    // The scripted model echoes plain input in 4-character chunks with no delay (CONTRACT section 9):
    // exactly B2's answer. A `!script` wrapper around 200,000 characters would exceed the
    // 200,000-character input limit of a text part.
    const r0 = await ctx.api.call('POST', `/v1/sessions/${sessionId}/runs`, { input: { role: 'user', content: [{ type: 'text', text }] } });
    if (r0.status !== 202) throw new Error(`B2 create run: ${r0.status} ${JSON.stringify(r0.body).slice(0, 300)}`);
    const runId: string = r0.body.run_id;
    let got = '';
    let complete = NaN;
    deltas = 0;
    const r = await readSse(sseUrl(ctx, `/v1/runs/${runId}/events`), {
      headers: auth(ctx),
      timeoutMs: 120_000,
      onFrame: (f) => {
        if (f.event === 'message.delta') {
          deltas++;
          got += JSON.parse(f.data).data.delta;
          if (got.length >= size && Number.isNaN(complete)) complete = f.perf - t0;
        }
        if (f.event === 'run.finished') return true;
      },
    });
    if (got !== text) throw new Error(`B2: received ${got.length} characters, not the script's ${size} (${r.end})`);
    times.push(complete);
    const page = await ctx.api.call('GET', `/v1/runs/${runId}/events?limit=1`);
    rows = page.body.last_sequence;
  }
  return {
    bench: 'B2',
    db: ctx.db,
    figures: [
      fig('200,000 chars delivered (median of rounds)', percentile(times, 50), 'ms', { op: '<=', value: 2000 }),
      fig('event rows written', rows, 'rows', { op: '<=', value: 200 }),
    ],
    notes: [`rounds: ${times.map((t) => round(t, 0)).join(', ')} ms; ${deltas} message.delta events per run`],
  };
}

// ---- B3 fan-out --------------------------------------------------------------------------

export async function b3(ctx: Ctx): Promise<Omit<BenchResult, 'load1'>> {
  const subscribers = 1000;
  const runs = ctx.quick ? 4 : 10;
  const sessionId = await createSession(ctx.api);
  // Warm the server's paths first so RSS "before" is not start-up growth.
  for (let i = 0; i < 3; i++) {
    const id = await startRun(ctx.api, sessionId, [{ text: answer(100), chunk_size: 4, delay_ms: 0 }]);
    await readSse(sseUrl(ctx, `/v1/runs/${id}/events`), { headers: auth(ctx), timeoutMs: 30_000, onFrame: (f) => f.event === 'run.finished' });
  }
  const cursor = (await ctx.api.call('GET', `/v1/sessions/${sessionId}/events?limit=1`)).body.last_sequence as number;
  global.gc?.();
  await sleep(1000);
  const rssBefore = rssBytes(ctx.app.pid);

  const abort = new AbortController();
  const delays: number[] = [];
  const finishedSeen = new Map<string, number>();
  let opened = 0;
  // A stream that fails before it opened (connection error) is counted and reported, not waited for.
  const failedToOpen: string[] = [];
  let openedAll!: () => void;
  const allOpen = new Promise<void>((r) => (openedAll = r));
  const onFrame = (f: SseFrame) => {
    const env = JSON.parse(f.data);
    delays.push(f.at - Date.parse(env.occurred_at));
    if (f.event === 'run.finished') finishedSeen.set(env.run_id, (finishedSeen.get(env.run_id) ?? 0) + 1);
  };
  log(`B3 opening ${subscribers} session subscribers`);
  const streams: Promise<unknown>[] = [];
  for (let i = 0; i < subscribers; i++) {
    streams.push(
      readSse(sseUrl(ctx, `/v1/sessions/${sessionId}/events`), {
        headers: { ...auth(ctx), 'last-event-id': String(cursor) },
        timeoutMs: 180_000,
        signal: abort.signal,
        onOpen: (status) => {
          if (status !== 200) throw new Error(`B3 subscriber got ${status}`);
          if (++opened + failedToOpen.length === subscribers) openedAll();
        },
        onFrame,
      }).then((r) => {
        if (r.status === 0 && r.end !== 'stopped') {
          failedToOpen.push(`${r.end}${r.error ? `: ${r.error}` : ''}`);
          if (opened + failedToOpen.length === subscribers) openedAll();
        }
        return r;
      }),
    );
    if (i % 100 === 99) await sleep(50);
  }
  await withTimeout(allOpen, 60_000, 'B3 subscribers to open');
  await sleep(500);
  const rssOpen = rssBytes(ctx.app.pid);
  log(`B3 ${subscribers} open; streaming ${runs} runs`);
  const cpu0 = cpuMs(ctx.app.pid);
  const t0 = Date.now();
  let rssPeak = rssOpen;
  for (let i = 0; i < runs; i++) {
    const id = await startRun(ctx.api, sessionId, [{ text: answer(800), chunk_size: 4, delay_ms: 2 }]);
    const deadline = Date.now() + 60_000;
    while ((finishedSeen.get(id) ?? 0) < opened && Date.now() < deadline) {
      rssPeak = Math.max(rssPeak, rssBytes(ctx.app.pid));
      await sleep(20);
    }
  }
  const cpu = (cpuMs(ctx.app.pid) - cpu0) / (Date.now() - t0);
  const rssAfter = rssBytes(ctx.app.pid);
  const complete = [...finishedSeen.values()].filter((n) => n === opened).length;
  abort.abort();
  await Promise.allSettled(streams);
  const perStream = (Math.max(rssAfter, rssOpen) - rssBefore) / Math.max(1, opened) / 1024;
  return {
    bench: 'B3',
    db: ctx.db,
    figures: [
      fig('commit-to-client p50', percentile(delays, 50), 'ms'),
      fig('commit-to-client p99', percentile(delays, 99), 'ms', { op: '<=', value: 50 }),
      fig('RSS per open stream', perStream, 'KiB', { op: '<=', value: 50 }),
      fig('RSS before', rssBefore / 1048576, 'MiB'),
      fig('RSS with 1,000 open (idle / after runs / peak)', rssAfter / 1048576, 'MiB'),
      fig('server CPU while streaming', cpu, 'cores'),
    ],
    notes: [
      `RSS ${round(rssBefore / 1048576)} MiB before, ${round(rssOpen / 1048576)} MiB with ${subscribers} idle streams, ${round(rssAfter / 1048576)} MiB after ${runs} runs, peak ${round(rssPeak / 1048576)} MiB`,
      `${delays.length} deliveries; ${complete}/${runs} runs reached all ${opened} open subscribers`,
      ...(failedToOpen.length ? [`${failedToOpen.length} of ${subscribers} streams failed to open: ${[...new Set(failedToOpen)].join('; ')}`] : []),
    ],
  };
}

// ---- B4 overhead -------------------------------------------------------------------------

function cannon(url: string, headers: Record<string, string>, durationS: number): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon({ url, headers, connections: 32, pipelining: 1, duration: durationS }, (err, res) => (err ? reject(err) : resolve(res)));
  });
}

export async function b4(ctx: Ctx): Promise<Omit<BenchResult, 'load1'>> {
  const sessionId = await createSession(ctx.api);
  const runId = await startRun(ctx.api, sessionId, [{ tool_calls: [{ name: 'get_time', arguments: {} }] }, { text: answer(200), chunk_size: 4 }]);
  await readSse(sseUrl(ctx, `/v1/runs/${runId}/events`), { headers: auth(ctx), timeoutMs: 30_000, onFrame: (f) => f.event === 'run.finished' });
  const d = ctx.quick ? 5 : 10;
  const path = `/v1/runs/${runId}`;
  log(`B4 app: GET ${path} for ${d} s (+2 s warm-up)`);
  await cannon(ctx.app.url + path, auth(ctx), 2);
  const appCpu0 = cpuMs(ctx.app.pid);
  const app = await cannon(ctx.app.url + path, auth(ctx), d);
  const appCpu = (cpuMs(ctx.app.pid) - appCpu0) / 1000 / d;
  const bare = await ctx.startBare();
  let ceiling: autocannon.Result;
  let bareCpu = NaN;
  try {
    log(`B4 bare Fastify + pg: GET ${path} for ${d} s (+2 s warm-up)`);
    await cannon(bare.url + path, {}, 2);
    const bareCpu0 = cpuMs(bare.pid);
    ceiling = await cannon(bare.url + path, {}, d);
    bareCpu = (cpuMs(bare.pid) - bareCpu0) / 1000 / d;
  } finally {
    await bare.stop();
  }
  const bad = app.non2xx + app.errors + ceiling.non2xx + ceiling.errors;
  const ratio = app.requests.average / ceiling.requests.average;
  return {
    bench: 'B4',
    db: ctx.db,
    figures: [
      fig('GET /v1/runs/{id}', app.requests.average, 'req/s', undefined, { name: 'bare Fastify + pg', value: round(ceiling.requests.average, 0) }),
      fig('ratio to the bare ceiling', ratio, 'x', { op: '>=', value: 0.5 }),
      fig('latency p99 (app)', app.latency.p99, 'ms'),
      fig('latency p99 (bare)', ceiling.latency.p99, 'ms'),
      fig('server CPU (app)', appCpu, 'cores'),
      fig('server CPU (bare)', bareCpu, 'cores'),
    ],
    notes: [`32 connections, ${d} s each; non-2xx/errors: ${bad}`],
  };
}

// ---- B5 resume ---------------------------------------------------------------------------

const SEED_EVENTS = 100_000;

/** A run with ~100,000 events: a real run paused in a model call, seeded with deltas, then cancelled. */
async function seededRun(ctx: Ctx): Promise<{ runId: string; last: number }> {
  const sessionId = await createSession(ctx.api);
  const runId = await startRun(ctx.api, sessionId, [{ sleep_ms: 600_000 }]);
  let messageId = '';
  await readSse(sseUrl(ctx, `/v1/runs/${runId}/events`), {
    headers: auth(ctx),
    timeoutMs: 30_000,
    onFrame: (f) => {
      if (f.event === 'message.started') {
        messageId = JSON.parse(f.data).data.message_id;
        return true;
      }
    },
  });
  if (!messageId) throw new Error('B5: no message.started');
  const c = new Client({ connectionString: ctx.dbUrl });
  await c.connect();
  try {
    const [{ tenant_id: tenant, subject_id: subject }] = (await c.query(`SELECT tenant_id, subject_id FROM runs WHERE id = $1`, [runId])).rows;
    const batch = 10_000;
    for (let done = 0; done < SEED_EVENTS; done += batch) {
      // Same protocol as the event store: session counter, then run counter, then the rows.
      await c.query('BEGIN');
      const s = Number((await c.query(`UPDATE event_streams SET last_sequence = last_sequence + $2 WHERE stream_id = $1 RETURNING last_sequence`, [sessionId, batch])).rows[0].last_sequence);
      const r = Number((await c.query(`UPDATE event_streams SET last_sequence = last_sequence + $2 WHERE stream_id = $1 RETURNING last_sequence`, [runId, batch])).rows[0].last_sequence);
      await c.query(
        `INSERT INTO run_events (id, tenant_id, subject_id, session_id, run_id, sequence, session_sequence, type, data, occurred_at)
         SELECT 'evt_seed_' || $4 || '_' || ($5::bigint - $7 + g), $1, $2, $3, $4, $5::bigint - $7 + g, $6::bigint - $7 + g, 'message.delta',
                jsonb_build_object('message_id', $8::text, 'content_index', 0, 'delta', 'abcd'), now()
           FROM generate_series(1, $7::int) g`,
        [tenant, subject, sessionId, runId, r, s, batch, messageId],
      );
      await c.query('COMMIT');
    }
    // PGlite has no autovacuum: without this its planner would never learn about the seeded
    // rows (PostgreSQL's autovacuum analyzes them on its own). BENCH_NO_ANALYZE=1 skips it.
    if (process.env.BENCH_NO_ANALYZE !== '1') await c.query('ANALYZE run_events');
  } finally {
    await c.end();
  }
  // The run_events trigger queued an audit record per seeded row: a read of the trail chains
  // them all now, so the background drain does not run during the measurements.
  const trail = await ctx.api.call('GET', '/v1/admin/audit?limit=1');
  if (trail.status !== 200) throw new Error(`B5 audit flush: ${trail.status}`);
  const cancel = await ctx.api.call('POST', `/v1/runs/${runId}/cancel`, {});
  if (cancel.status !== 202 && cancel.status !== 200) throw new Error(`B5 cancel: ${cancel.status}`);
  for (let i = 0; i < 300; i++) {
    const r = await ctx.api.call('GET', `/v1/runs/${runId}`);
    if (['cancelled', 'completed', 'failed', 'terminated'].includes(r.body.status)) break;
    await sleep(100);
  }
  const last = (await ctx.api.call('GET', `/v1/runs/${runId}/events?limit=1`)).body.last_sequence as number;
  // Builds with signed checkpoints (issue 32) then verify the ~100,000 newly chained records before
  // signing their head, in the background: wait for that too, so the resumes are measured on a
  // quiet service (builds without the status endpoint answer 404 and have nothing to wait for).
  const t = performance.now();
  for (let i = 0; i < 600; i++) {
    const st = await ctx.api.call('GET', '/v1/admin/audit/status');
    if (st.status !== 200) break;
    const signed = (st.body.latest_checkpoint?.seq as number | undefined) ?? 0;
    if ((st.body.last_seq as number) - signed < 1000) {
      log(`B5 audit checkpoint caught up at ${signed} of ${st.body.last_seq} (${round((performance.now() - t) / 1000)} s)`);
      break;
    }
    await sleep(100);
  }
  return { runId, last };
}

export async function b5(ctx: Ctx): Promise<Omit<BenchResult, 'load1'>> {
  log(`B5 seeding a run with ${SEED_EVENTS} events`);
  const t = performance.now();
  const { runId, last } = await seededRun(ctx);
  log(`B5 seeded: last sequence ${last} (${round((performance.now() - t) / 1000)} s)`);
  const reps = ctx.quick ? 20 : 50;
  const near = { start: 10, end: last - 10 };
  const samples: Record<'start' | 'end', number[]> = { start: [], end: [] };
  const firstFrame = async (cursor: number) => {
    const t0 = performance.now();
    let dt = NaN;
    let wrong = '';
    const r = await readSse(sseUrl(ctx, `/v1/runs/${runId}/events`), {
      headers: { ...auth(ctx), 'last-event-id': String(cursor) },
      timeoutMs: 10_000,
      onFrame: (f) => {
        if (Number(f.id) !== cursor + 1) wrong = String(f.id);
        dt = f.perf - t0;
        return true;
      },
    });
    if (wrong || Number.isNaN(dt)) throw new Error(`B5: resume after ${cursor} gave first frame ${wrong || 'none'} (${r.end} ${r.error ?? ''})`);
    return dt;
  };
  for (let i = 0; i < 5; i++) await firstFrame(near.start), await firstFrame(near.end); // warm-up
  for (let i = 0; i < reps; i++) {
    samples.start.push(await firstFrame(near.start));
    samples.end.push(await firstFrame(near.end));
  }
  const pStart = percentile(samples.start, 50);
  const pEnd = percentile(samples.end, 50);
  return {
    bench: 'B5',
    db: ctx.db,
    figures: [
      fig(`first frame near the end (Last-Event-ID ${near.end}) p50`, pEnd, 'ms', { op: '<=', value: 20 }, { name: 'near the start', value: round(pStart, 2) }),
      fig('first frame near the end p99', percentile(samples.end, 99), 'ms'),
      fig(`first frame near the start (Last-Event-ID ${near.start}) p50`, pStart, 'ms', { op: '<=', value: 20 }),
      fig('first frame near the start p99', percentile(samples.start, 99), 'ms'),
      fig('end / start (p50)', pEnd / pStart, 'x'),
    ],
    notes: [`run with ${last} events (${SEED_EVENTS} seeded message.delta rows); ${reps} sequential resumes at each cursor`],
  };
}
