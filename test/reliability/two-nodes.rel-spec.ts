import {
  allEvents,
  createSession,
  Figures,
  freshDatabase,
  NodeProcess,
  requirePostgres,
  script,
  sleep,
  sql,
  SseReader,
  startNode,
  startRun,
  tempDir,
  TERMINAL,
  until,
  waitForRunStatus,
  KEY,
} from './rel-helpers';

/**
 * Two nodes, one PostgreSQL (issue 6 item 2): runs spread across both workers; an SSE client on
 * one node receives live, in order, the events of a run executed on the other (LISTEN/NOTIFY);
 * `kill -9` of the executing node mid-run and the other takes the run over when the lease expires.
 */
describe('two nodes on one PostgreSQL database', () => {
  const dirA = tempDir();
  const dirB = tempDir();
  let db: Awaited<ReturnType<typeof freshDatabase>> = null;
  const nodes: NodeProcess[] = [];
  const figures = new Figures('two-nodes');

  beforeAll(async () => {
    requirePostgres();
    db = await freshDatabase();
  });
  afterAll(async () => {
    for (const n of nodes) await n.kill9();
    await db?.drop();
    dirA.remove();
    dirB.remove();
  });

  it('spreads runs, streams across nodes live and in order, and survives kill -9 of the executing node', async () => {
    const env = { WORKER_CONCURRENCY: '3', RUN_LEASE_MS: '2000' };
    // Both start at once on a fresh database, as replicas of a deployment do (migrations race).
    const [a, b] = await Promise.all([
      startNode({ name: 'node-a', dataDir: dirA.path, databaseUrl: db!.url, env }),
      startNode({ name: 'node-b', dataDir: dirB.path, databaseUrl: db!.url, env }),
    ]);
    nodes.push(a, b);
    const byId = new Map([[a.nodeId, a], [b.nodeId, b]]);

    // Watch which node holds each run's lease.
    const owners = new Map<string, Set<string>>();
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const rows = await sql<{ id: string; lease_owner: string }>(db!.url, `SELECT id, lease_owner FROM runs WHERE lease_owner IS NOT NULL`).catch(() => []);
        for (const r of rows) owners.set(r.id, (owners.get(r.id) ?? new Set()).add(r.lease_owner));
        await sleep(30);
      }
    })();

    // 1. Spread: 12 runs of ~1 s each, accepted alternately by both nodes.
    const spread: string[] = [];
    for (let i = 0; i < 12; i++) {
      const n = i % 2 === 0 ? a : b;
      const sid = await createSession(n);
      const r = await startRun(n, sid, script([{ text: `run ${i} `.repeat(20), chunk_size: 8, delay_ms: 40 }]));
      expect(r.status).toBe(202);
      spread.push(r.body.run_id);
    }
    figures.runsAccepted += spread.length;
    const finished = await Promise.all(spread.map((id, i) => waitForRunStatus(i % 2 === 0 ? b : a, id, (r) => TERMINAL.includes(r.status), 60_000)));
    for (const run of finished) expect(run.status).toBe('completed');
    figures.runsFinished += finished.length;
    for (const id of spread) figures.checkRun(id, await allEvents(a, id));
    const executedBy = new Map<string, number>();
    for (const id of spread) for (const o of owners.get(id) ?? []) executedBy.set(o, (executedBy.get(o) ?? 0) + 1);
    expect([...executedBy.keys()].sort()).toEqual([a.nodeId, b.nodeId].sort());

    // 2. A long answer: the SSE client sits on the node that is NOT executing it.
    const text = 'Streaming across nodes, one delta at a time. '.repeat(12);
    const sid = await createSession(a);
    const r = await startRun(a, sid, script([{ text, chunk_size: 3, delay_ms: 30 }]));
    expect(r.status).toBe(202);
    figures.runsAccepted++;
    const runId = r.body.run_id;
    const execNodeId = await until('the long run to be claimed', 20_000, async () => {
      const o = owners.get(runId);
      return o && o.size > 0 ? [...o][0] : undefined;
    });
    const executing = byId.get(execNodeId)!;
    const other = executing === a ? b : a;
    const sse = new SseReader(`${other.url}/v1/runs/${runId}/events`, KEY);
    await sse.opened;
    expect(sse.status).toBe(200);
    await sse.waitFor('a few live deltas from the other node', 20_000, (ev) => ev.filter((e) => e.type === 'message.delta').length >= 5);
    // Live: events written by the executing node arrive here within a second of their commit.
    const live = sse.events.filter((e) => e.type === 'message.delta').slice(-3);
    for (const e of live) expect(e.receivedAt - Date.parse(e.data.occurred_at)).toBeLessThan(1000);

    // 3. kill -9 the executing node mid-stream: the other one takes the run over after the lease expires.
    await executing.kill9();
    const killedAt = Date.now();
    const done = await waitForRunStatus(other, runId, (x) => TERMINAL.includes(x.status), 60_000);
    const takeOverMs = Date.now() - killedAt;
    expect(done.status).toBe('completed');
    figures.runsFinished++;
    await sse.waitFor('run.finished on the surviving node', 20_000, (ev) => ev.some((e) => e.type === 'run.finished'));
    await sse.done;
    expect(sse.end).toBe('clean');
    watching = false;
    await watcher;
    expect([...(owners.get(runId) ?? [])].sort()).toEqual([a.nodeId, b.nodeId].sort());

    // The SSE view is exactly the stored stream: 1..N, in order, nothing twice.
    const stored = await allEvents(other, runId);
    figures.checkRun(runId, stored);
    expect(sse.events.map((e) => e.id)).toEqual(stored.map((e) => e.sequence));
    expect(sse.events.map((e) => e.data.event_id)).toEqual(stored.map((e) => e.event_id));
    const final = await other.call('GET', `/v1/sessions/${sid}/messages/${done.final_message_id}`);
    expect(final.body.content).toEqual([{ type: 'text', text }]);

    figures.print({ executed_by: Object.fromEntries(executedBy), take_over_ms: takeOverMs, sse_events_across_nodes: sse.events.length });
    expect(figures.problems).toEqual([]);
    expect(figures.duplicates).toBe(0);
    expect(figures.gaps).toBe(0);
    expect(figures.runsFinished).toBe(figures.runsAccepted);
  }, 300_000);
});
