import { Client } from 'pg';
import { createSession, script } from './lib/api';
import { cpuMs } from './lib/server';
import { log, percentile, pool, round, sleep } from './lib/util';
import type { BenchResult, Ctx } from './scenarios';
import { fig } from './scenarios';

const AGENT = 'bench_timer_agent';

async function count(c: Client, sql: string, params: unknown[] = []): Promise<number> {
  return Number((await c.query<{ n: number }>(sql, params)).rows[0].n);
}

/**
 * B8 (issue 26): 10,000 runs (2,000 with `--quick`) paused in `wait_until` whose timers are all due
 * at the same moment; the time from that moment until every run was resumed (the due sweeper's
 * claim and wake, `run.resumed`) and until every run finished (a worker ran its last model turn).
 *
 * The runs are real: created through the API (a session each, agent with `wait_until`), each
 * executes its first model turn and pauses in `waiting_for_timer` until a time 50 minutes ahead.
 * Creating 10,000 runs takes minutes, so their common due time cannot be known when the first
 * one is created: once all of them wait, ONE UPDATE moves every timer (the pause's `until`,
 * `wake_at`, the requested time, and the `wake_at` column the sweeper claims by) to T = now + 3 s,
 * as if the 50 minutes had passed. Then the database is polled (every 100 ms) for the runs still
 * waiting and those completed.
 */
export async function b8(ctx: Ctx): Promise<Omit<BenchResult, 'load1'>> {
  const n = ctx.quick ? 2_000 : 10_000;
  const agent = await ctx.api.call('POST', '/v1/agents', { id: AGENT, description: 'Waits until a time.', instructions: 'Wait when told.', tools: ['wait_until'] });
  if (agent.status !== 201 && agent.status !== 409) throw new Error(`B8 agent: ${agent.status} ${JSON.stringify(agent.body)}`);
  const far = new Date(Date.now() + 50 * 60_000).toISOString();
  const turns = [{ tool_calls: [{ name: 'wait_until', arguments: { time: far } }] }, { text: 'woke' }];

  const c = new Client({ connectionString: ctx.dbUrl });
  await c.connect();
  try {
    log(`B8: creating ${n} runs that wait until ${far}`);
    const t0 = performance.now();
    // Each client creates its next run once its last one waits (`mode: "sync"` answers then): the
    // creation never runs ahead of the executor. A run that failed instead (on this loaded 2-core
    // machine: the executor's pool wait timed out, see bench/README.md B8) is replaced, and counted.
    let replaced = 0;
    await pool(16, n, Date.now() + 60 * 60_000, async () => {
      for (let attempt = 0; ; attempt++) {
        const sid = await createSession(ctx.api, AGENT).catch(() => null);
        const r = sid ? await ctx.api.call('POST', `/v1/sessions/${sid}/runs`, { input: script(turns), limits: { timeout_ms: 3_600_000 }, mode: 'sync', wait_timeout_ms: 120_000 }) : null;
        if (r && r.status === 200 && r.body.status === 'waiting_for_timer') return;
        if (attempt >= 10) throw new Error(`B8: run creation: ${r?.status} ${JSON.stringify(r?.body).slice(0, 300)}`);
        replaced++;
        if (r?.body?.id && r.body.status !== 'waiting_for_timer') await ctx.api.call('POST', `/v1/runs/${r.body.id}/cancel`, {}).catch(() => null);
        await sleep(500);
      }
    });
    const waitingQuery = `SELECT count(*)::int AS n FROM runs WHERE status = 'waiting_for_timer' AND agent_id = '${AGENT}'`;
    for (const bound = Date.now() + 30 * 60_000; ; ) {
      const w = await count(c, waitingQuery);
      if (w >= n) break;
      if (Date.now() > bound) throw new Error(`B8: only ${w}/${n} runs wait for their timer`);
      await sleep(500);
    }
    const createdS = (performance.now() - t0) / 1000;
    log(`B8: ${n} runs waiting after ${round(createdS)} s (${replaced} replaced)`);
    await sleep(2_000);

    // Every timer due at T.
    const due = Math.ceil((Date.now() + 3_000) / 1000) * 1000;
    const dueIso = new Date(due).toISOString();
    const moved = await c.query(
      `UPDATE runs SET wake_at = $1::timestamptz,
         state = jsonb_set(jsonb_set(jsonb_set(jsonb_set(state, '{pause,until}', to_jsonb($2::text)), '{pause,wake_at}', to_jsonb($2::text)),
                 '{pause,details,requested_until}', to_jsonb($2::text)), '{pause,details,requested_until_ms}', to_jsonb($3::bigint))
       WHERE status = 'waiting_for_timer' AND agent_id = '${AGENT}'`,
      [new Date(due), dueIso, due],
    );
    const waiting = moved.rowCount ?? 0;
    if (waiting < n) throw new Error(`B8: moved ${waiting} timers, expected ${n}`);
    while (Date.now() < due) await sleep(10);
    const cpu0 = cpuMs(ctx.app.pid);
    let half = NaN;
    let allResumed = NaN;
    let allDone = NaN;
    for (const bound = due + 20 * 60_000; ; ) {
      const r = (await c.query<{ waiting: number; done: number }>(
        `SELECT count(*) FILTER (WHERE status = 'waiting_for_timer')::int AS waiting, count(*) FILTER (WHERE status = 'completed')::int AS done FROM runs WHERE agent_id = '${AGENT}'`,
      )).rows[0];
      const at = Date.now() - due;
      if (Number.isNaN(half) && r.waiting <= waiting / 2) half = at;
      if (Number.isNaN(allResumed) && r.waiting === 0) allResumed = at;
      if (r.done === waiting) {
        allDone = at;
        break;
      }
      if (Date.now() > bound) throw new Error(`B8: after 20 min ${r.waiting} runs still wait, ${r.done}/${waiting} completed`);
      await sleep(100);
    }
    const cpu = (cpuMs(ctx.app.pid) - cpu0) / allDone;
    // Exactly once: one run.resumed per run, none resumed before T.
    const resumed = (await c.query<{ runs: number; events: number; early: number }>(
      `SELECT count(DISTINCT run_id)::int AS runs, count(*)::int AS events, count(*) FILTER (WHERE occurred_at < $1)::int AS early FROM run_events WHERE type = 'run.resumed' AND run_id IN (SELECT id FROM runs WHERE agent_id = '${AGENT}')`,
      [new Date(due)],
    )).rows[0];
    if (resumed.runs !== waiting || resumed.events !== waiting || resumed.early !== 0) throw new Error(`B8: run.resumed ${JSON.stringify(resumed)} for ${waiting} runs`);
    const lags = (await c.query<{ ms: number }>(
      `SELECT extract(epoch FROM (occurred_at - $1::timestamptz)) * 1000 AS ms FROM run_events WHERE type = 'run.resumed' AND run_id IN (SELECT id FROM runs WHERE agent_id = '${AGENT}')`,
      [new Date(due)],
    )).rows.map((r) => Number(r.ms));
    return {
      bench: 'B8',
      db: ctx.db,
      figures: [
        fig(`all ${n} runs resumed (after the due time)`, allResumed, 'ms'),
        fig('half of them resumed', half, 'ms'),
        fig(`all ${n} runs finished`, allDone, 'ms'),
        fig('resumes/s', waiting / (allResumed / 1000), 'runs/s'),
        fig('run.resumed after the due time p50', percentile(lags, 50), 'ms'),
        fig('run.resumed after the due time p99', percentile(lags, 99), 'ms'),
        fig('server CPU until all finished', cpu, 'cores'),
      ],
      notes: [
        `${n} runs created through the API in ${round(createdS)} s (16 clients, mode sync; ${replaced} that failed or did not wait in time replaced), each paused in waiting_for_timer; one UPDATE then moved all timers to the same due time (see bench/timers.ts); polled every 100 ms; every run resumed exactly once (${resumed.events} run.resumed, none before the due time)`,
      ],
    };
  } finally {
    await c.end();
  }
}
