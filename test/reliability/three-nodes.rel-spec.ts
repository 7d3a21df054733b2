import { NatsServer, startNatsServer } from '../helpers/nats-server';
import { requireNatsServerBinary } from '../helpers/requirements';
import { allEvents, createSession, Figures, freshDatabase, KEY, NodeProcess, requirePostgres, script, sleep, SseReader, startNode, startRun, tempDir } from './rel-helpers';

const RUNS = 300;
const CLIENTS = 24;
const STREAM_BOUND_MS = 60_000;

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/**
 * Three nodes on one PostgreSQL database (issue 30): 300 runs, each started on a random node and
 * streamed over SSE from another one, must arrive complete - every event once, in order, the
 * stream equal to the stored one. Cross-node notifications go over NATS (its server killed and
 * restarted while runs stream: the nodes read PostgreSQL meanwhile) or over LISTEN/NOTIFY.
 */
describe.each([
  ['nats', true],
  ['listen/notify', false],
])('three nodes, notifications over %s', (variant, withNats) => {
  if (withNats) requireNatsServerBinary();
  const dirs = [tempDir(), tempDir(), tempDir()];
  let db: Awaited<ReturnType<typeof freshDatabase>> = null;
  let nats: NatsServer | null = null;
  const nodes: NodeProcess[] = [];
  const figures = new Figures(`three-nodes-${withNats ? 'nats' : 'listen-notify'}`);

  beforeAll(async () => {
    requirePostgres();
    db = await freshDatabase();
    if (withNats) nats = await startNatsServer();
  });
  afterAll(async () => {
    for (const n of nodes) await n.kill9();
    await nats?.stop();
    await db?.drop();
    for (const d of dirs) d.remove();
  });

  it(`${RUNS} runs on random nodes, each streamed from another node: none lost, none repeated${withNats ? ', NATS killed and restarted mid-way' : ''}`, async () => {
    const env: Record<string, string> = { RUN_LEASE_MS: '5000', ...(nats ? { NATS_URL: nats.url, NATS_DEGRADED_POLL_MS: '250' } : {}) };
    // The first node migrates; the others start once it is up (a fresh database each).
    nodes.push(await startNode({ name: 'node-1', dataDir: dirs[0].path, databaseUrl: db!.url, env }));
    nodes.push(...(await Promise.all([1, 2].map((i) => startNode({ name: `node-${i + 1}`, dataDir: dirs[i].path, databaseUrl: db!.url, env })))));
    for (const n of nodes) {
      const ready = await n.call('GET', '/readyz', undefined, {}, null);
      expect(ready.status).toBe(200);
      expect(ready.body.notifier).toMatchObject({ kind: withNats ? 'nats' : 'postgres', connected: true });
    }

    const firstEventMs: number[] = [];
    const lagMs: number[] = [];
    const streamed = new Map<string, SseReader>();
    let started = 0;
    let outage: { killedAt: number; restartedAt: number; runsDuring: number } | null = null;
    const text = 'Across three nodes. '.repeat(4);

    const one = async (i: number) => {
      const a = nodes[Math.floor(Math.random() * nodes.length)];
      const others = nodes.filter((n) => n !== a);
      const b = others[Math.floor(Math.random() * others.length)];
      const sid = await createSession(a);
      const t0 = Date.now();
      const r = await startRun(a, sid, script([{ text, chunk_size: 10, delay_ms: 15 }]));
      expect(r.status).toBe(202);
      figures.runsAccepted++;
      const runId: string = r.body.run_id;
      const sse = new SseReader(`${b.url}/v1/runs/${runId}/events`, KEY);
      streamed.set(runId, sse);
      await sse.opened;
      expect(sse.status).toBe(200);
      await sse.waitFor(`run ${i} to finish on the streaming node`, STREAM_BOUND_MS, (ev) => ev.some((e) => e.type === 'run.finished'));
      await sse.done;
      firstEventMs.push(sse.events[0].receivedAt - t0);
      for (const e of sse.events) lagMs.push(e.receivedAt - Date.parse(e.data.occurred_at));
      figures.runsFinished++;
    };

    const client = async () => {
      for (;;) {
        const i = started++;
        if (i >= RUNS) return;
        if (nats && i === Math.floor(RUNS / 3)) {
          // NATS goes away while runs stream, and comes back 3 s later.
          const killedAt = Date.now();
          const before = started;
          await nats.kill();
          outage = { killedAt, restartedAt: 0, runsDuring: 0 };
          const o = outage;
          setTimeout(() => {
            void nats!.restart().then(() => {
              o.restartedAt = Date.now();
              o.runsDuring = started - before;
            });
          }, 3000);
        }
        await one(i);
      }
    };
    const t0 = Date.now();
    await Promise.all(Array.from({ length: CLIENTS }, () => client()));
    const wallMs = Date.now() - t0;

    // Every stream equals the stored stream: 1..N, each event once, in order.
    let lost = 0;
    let repeated = 0;
    for (const [runId, sse] of streamed) {
      const stored = await allEvents(nodes[0], runId);
      figures.checkRun(runId, stored);
      const seen = sse.events.map((e) => e.id);
      repeated += seen.length - new Set(seen).size;
      const have = new Set(seen);
      lost += stored.filter((e) => !have.has(e.sequence)).length;
      expect(seen).toEqual(stored.map((e) => e.sequence));
      expect(sse.events.map((e) => e.data.event_id)).toEqual(stored.map((e) => e.event_id));
    }

    if (nats) {
      expect(outage).not.toBeNull();
      // The nodes are connected again, by themselves.
      for (const n of nodes) {
        const deadline = Date.now() + 20_000;
        let body: any;
        do {
          body = (await n.call('GET', '/readyz', undefined, {}, null)).body;
          if (body.notifier?.connected) break;
          await sleep(200);
        } while (Date.now() < deadline);
        expect(body.notifier).toMatchObject({ kind: 'nats', connected: true, degraded: false });
      }
      const metrics = await Promise.all(nodes.map((n) => n.call('GET', '/metrics', undefined, {}, null)));
      const polls = metrics.map((m) => Number(/^agent_api_notifier_degraded_polls_total (\d+)$/m.exec(String(m.body))?.[1] ?? 0));
      for (const p of polls) expect(p).toBeGreaterThan(0);
    }

    figures.print({
      variant,
      nodes: nodes.length,
      runs_streamed: streamed.size,
      lost,
      repeated,
      cross_node_first_event_ms: { p50: percentile(firstEventMs, 50), p99: percentile(firstEventMs, 99), max: Math.max(...firstEventMs) },
      cross_node_delivery_lag_ms: { p50: percentile(lagMs, 50), p99: percentile(lagMs, 99) },
      wall_ms: wallMs,
      runs_per_s: Math.round((RUNS / wallMs) * 10_000) / 10,
      ...(outage ? { nats_outage: outage } : {}),
    });
    expect(lost).toBe(0);
    expect(repeated).toBe(0);
    expect(figures.problems).toEqual([]);
    expect(figures.duplicates).toBe(0);
    expect(figures.gaps).toBe(0);
    expect(figures.runsFinished).toBe(RUNS);
  }, 600_000);
});
