import { createSession, startRun } from './lib/api';
import { readSse } from './lib/sse';
import { log, percentile } from './lib/util';
import type { BenchResult, Ctx } from './scenarios';
import { answer, closedLoop, fig } from './scenarios';

const WORKER = 'bench_sub_worker';
const LEAD = 'bench_fanout_lead';
const FAN_OUT = 5;
const CLIENTS = 20;

/** The lead's script: 5 `create_subagent` in one turn, `wait_for_subagents`, then a final answer carrying what the wait returned. */
function leadTurns(): unknown[] {
  const child = (i: number) => `!script ${JSON.stringify([{ text: `result-${i} ${answer(40)}`, chunk_size: 8 }])}`;
  return [
    { tool_calls: Array.from({ length: FAN_OUT }, (_, i) => ({ name: 'create_subagent', arguments: { agent_id: WORKER, name: `s${i + 1}`, instructions: child(i + 1) } })) },
    { tool_calls: [{ name: 'wait_for_subagents', arguments: {} }] },
    { text: 'final: {{last_tool_result}}', chunk_size: 64 },
  ];
}

/** One parent run: a session, the run, its stream read to `run.finished`; ok when it completed and its answer has all 5 children's results. */
function parentRun(ctx: Ctx, problems: string[]) {
  const turns = leadTurns();
  const auth = { authorization: `Bearer ${ctx.api.key}` };
  return async () => {
    const began = performance.now();
    const sessionId = await createSession(ctx.api, LEAD);
    const t0 = performance.now();
    const runId = await startRun(ctx.api, sessionId, turns);
    let finished = NaN;
    let status = '';
    let final = '';
    await readSse(`${ctx.app.url}/v1/runs/${runId}/events`, {
      headers: auth,
      timeoutMs: 120_000,
      onFrame: (f) => {
        if (f.event === 'message.completed') final = JSON.stringify(JSON.parse(f.data).data.content);
        if (f.event === 'run.finished') {
          finished = f.perf - t0;
          status = JSON.parse(f.data).data.status;
          return true;
        }
      },
    });
    const missing = Array.from({ length: FAN_OUT }, (_, i) => `result-${i + 1}`).filter((r) => !final.includes(r));
    const complete = missing.length === 0;
    const ok = status === 'completed' && complete;
    if (!ok && problems.length < 5) problems.push(`${runId}: ${status || 'no run.finished'}${complete ? '' : `, its answer lacks ${missing.join(', ')}`}`);
    return { ok, finished, began, at: performance.now() };
  };
}

/**
 * B7 (issue 25): multi-agent fan-out. 20 clients in one closed loop, each starting a parent run
 * (scripted model) that creates 5 subagents in one turn (5 child sessions, 5 child runs of a
 * scripted answer), waits for them in `waiting_for_subagents`, then answers with their results; the
 * client reads the parent's SSE stream to `run.finished`. Figures: completed parent runs/s (each is
 * 6 runs), the time from the parent's POST to its `run.finished` (its final answer) p50/p99, and
 * the CPU per parent run. A parent counts only if it completed and its answer has all 5 results.
 * Not in the default set: `--only B7`.
 */
export async function b7(ctx: Ctx): Promise<Omit<BenchResult, 'load1'>> {
  for (const body of [
    { id: WORKER, description: 'Answers as scripted.', instructions: 'Answer.', tools: [] },
    { id: LEAD, description: 'Fans out to subagents.', instructions: 'Delegate.', tools: [], subagents: { enabled: true, agents: [WORKER], max_concurrent: FAN_OUT } },
  ]) {
    const r = await ctx.api.call('POST', '/v1/agents', body);
    if (r.status !== 201 && r.status !== 409) throw new Error(`B7 agent ${body.id}: ${r.status} ${JSON.stringify(r.body)}`);
  }
  const problems: string[] = [];
  const one = parentRun(ctx, problems);
  const warmupMs = ctx.quick ? 3_000 : 5_000;
  const durationMs = ctx.quick ? 10_000 : 30_000;
  log(`B7: ${CLIENTS} clients in one closed loop (parents fanning out to ${FAN_OUT} subagents), ${warmupMs} ms warm-up (not counted), then ${durationMs} ms measured`);
  const { results, cpuMs: cpu, dbCpuMs, windowStart, windowEnd } = await closedLoop(ctx, CLIENTS, warmupMs, durationMs, one);
  const completedInWindow = results.filter((r) => r.ok && r.at >= windowStart && r.at <= windowEnd).length;
  const measured = results.filter((r) => r.began >= windowStart && r.began < windowEnd);
  const ok = measured.filter((r) => r.ok);
  return {
    bench: 'B7',
    db: ctx.db,
    figures: [
      fig(`completed parent runs/s (${CLIENTS} clients, ${FAN_OUT} subagents each)`, completedInWindow / (durationMs / 1000), 'runs/s'),
      fig("time to the parent's final answer p50", percentile(ok.map((r) => r.finished), 50), 'ms'),
      fig("time to the parent's final answer p99", percentile(ok.map((r) => r.finished), 99), 'ms'),
      fig('server CPU per completed parent run (with its 5 children)', cpu / completedInWindow, 'ms'),
      ...(ctx.db === 'postgres' ? [fig('PostgreSQL CPU per completed parent run (bench database backends)', dbCpuMs / completedInWindow, 'ms')] : []),
    ],
    notes: [
      `${completedInWindow} parents (${completedInWindow * (FAN_OUT + 1)} runs) completed in the ${durationMs / 1000} s window; ${ok.length}/${measured.length} parents started in it completed with all ${FAN_OUT} results in their answer (latencies are theirs); ${results.filter((r) => !r.ok).length} not ok in all`,
      ...problems.map((p) => `not ok: ${p}`),
    ],
  };
}
