import { ADMIN_KEY, allEvents, Figures, freshDatabase, NodeProcess, requirePostgres, script, sleep, sql, startNode, tempDir, TERMINAL, until } from './rel-helpers';

const TIMERS = 200;
const AUTOMATIONS = 20;
const CLIENTS = 16;
/** Bound for everything due to have fired and finished after the due second. */
const FIRE_BOUND_MS = 120_000;

/**
 * Issue 26 (CONTRACT 17: timers and automations fire exactly once across nodes): three nodes on
 * one PostgreSQL database, 200 runs paused in `wait_until` the same second and 20 one-time
 * automations due in that second. Real processes use the real clock (the Clock port is in-process
 * only), so the due second is set a little ahead of the setup. Each timer rings once (one
 * `run.resumed`, one `tool.completed`, the run completes), each automation fires once (one
 * invocation, one run), and no other run exists. The second case `kill -9`s a node at that second.
 */
describe('three nodes: 200 timers and 20 automations due in the same second', () => {
  const dbs: Array<NonNullable<Awaited<ReturnType<typeof freshDatabase>>>> = [];
  const nodes: NodeProcess[] = [];
  const dirs: Array<ReturnType<typeof tempDir>> = [];

  beforeAll(() => {
    requirePostgres();
  });
  afterAll(async () => {
    for (const n of nodes) await n.kill9();
    for (const db of dbs) await db.drop();
    for (const d of dirs) d.remove();
  });

  async function threeNodes(): Promise<{ url: string; nodes: NodeProcess[] }> {
    const db = (await freshDatabase())!;
    dbs.push(db);
    const env = { RUN_LEASE_MS: '2000', AUTOMATION_POLL_MS: '250' };
    const mine: NodeProcess[] = [];
    const dir = () => {
      const d = tempDir();
      dirs.push(d);
      return d.path;
    };
    // The first node migrates; the others start once it is up.
    mine.push(await startNode({ name: 'node-1', dataDir: dir(), databaseUrl: db.url, env }));
    mine.push(...(await Promise.all([2, 3].map((i) => startNode({ name: `node-${i}`, dataDir: dir(), databaseUrl: db.url, env })))));
    nodes.push(...mine);
    return { url: db.url, nodes: mine };
  }

  /** `count` jobs over CLIENTS concurrent clients. */
  async function inParallel<T>(count: number, job: (i: number) => Promise<T>): Promise<T[]> {
    const out: T[] = new Array(count);
    let next = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        for (let i = next++; i < count; i = next++) out[i] = await job(i);
      }),
    );
    return out;
  }

  async function scenario(killAtDue: boolean): Promise<void> {
    const { url, nodes: ns } = await threeNodes();
    const figures = new Figures(killAtDue ? 'timers-automations-kill9' : 'timers-automations');
    const on = (i: number) => ns[i % ns.length];
    // As a client does: a 503 (the database's connection wait on a loaded machine) is retried with the same Idempotency-Key.
    const post = async (n: NodeProcess, path: string, body: unknown) => {
      const idem = `rel-${path}-${Math.random().toString(36).slice(2)}`;
      for (let attempt = 0; ; attempt++) {
        const r = await n.call('POST', path, body, { 'idempotency-key': idem }, ADMIN_KEY, 30_000);
        if (r.status === 201 || r.status === 202) return r.body;
        const retry = r.status === 503 || (r.status === 409 && r.body?.error?.code === 'idempotency_in_progress');
        if (!retry || attempt >= 10) throw new Error(`POST ${path}: ${r.status} ${JSON.stringify(r.body)}`);
        await sleep(500 + Math.random() * 500);
      }
    };
    await post(ns[0], '/v1/agents', { id: 'timer_agent', description: 'Waits until a time.', instructions: 'Wait when told.', tools: ['wait_until'] });
    const sessions = await inParallel(TIMERS, async (i) => (await post(on(i), '/v1/sessions', { agent_id: 'timer_agent' })).id as string);

    // The due second: far enough ahead for the setup on a loaded machine.
    const due = Math.ceil((Date.now() + 45_000) / 1000) * 1000;
    const dueIso = new Date(due).toISOString();
    const runIds = await inParallel(TIMERS, async (i) => {
      const input = { role: 'user', content: [{ type: 'text', text: script([{ tool_calls: [{ name: 'wait_until', arguments: { time: dueIso } }] }, { text: `woke ${i}` }]) }] };
      return (await post(on(i), `/v1/sessions/${sessions[i]}/runs`, { input })).run_id as string;
    });
    figures.runsAccepted += runIds.length;
    const automations = await inParallel(AUTOMATIONS, async (i) => {
      const input = { role: 'user', content: [{ type: 'text', text: script([{ text: `fired ${i}` }]) }] };
      const a = await post(on(i), '/v1/automations', { name: `due-${i}`, schedule: { type: 'once', at: dueIso }, target: { type: 'new_session', agent_id: 'assistant' }, input });
      expect(a.next_run_at).toBe(dueIso);
      return a.id as string;
    });
    // Every timer run is paused before the due second (else the scenario proves nothing).
    await until('all timer runs to wait for their timer', Math.max(1000, due - Date.now() - 1000), async () => {
      const [{ n }] = await sql<{ n: number }>(url, `SELECT count(*)::int AS n FROM runs WHERE status = 'waiting_for_timer'`);
      return n === TIMERS ? true : undefined;
    }, 250);
    expect((await sql<{ n: number }>(url, `SELECT count(*)::int AS n FROM automation_invocations`))[0].n).toBe(0);
    const setupLeftMs = due - Date.now();

    let killed: { node: string; at: number; orphaned: number } | null = null;
    if (killAtDue) {
      // In the due second, as soon as the first timers ring: the victim is claiming and resuming
      // what is due along with the others (and executing what it resumed).
      await sleep(Math.max(0, due - Date.now()));
      await until('the first timer to ring', 15_000, async () => {
        const [{ n }] = await sql<{ n: number }>(url, `SELECT count(*)::int AS n FROM runs WHERE status = 'waiting_for_timer'`);
        return n < TIMERS ? true : undefined;
      }, 20);
      const victim = ns[1];
      await victim.kill9();
      killed = { node: victim.nodeId, at: Date.now() - due, orphaned: 0 };
      const [{ n }] = await sql<{ n: number }>(url, `SELECT count(*)::int AS n FROM runs WHERE lease_owner = $1`, [victim.nodeId]);
      killed.orphaned = n;
    }
    const alive = ns.filter((n) => n.isRunning());

    // Everything due fires and finishes.
    await until('every timer run and automation run to finish', FIRE_BOUND_MS + Math.max(0, due - Date.now()), async () => {
      const [r] = await sql<{ open: number; total: number }>(url, `SELECT count(*) FILTER (WHERE status NOT IN (${TERMINAL.map((s) => `'${s}'`).join(',')}))::int AS open, count(*)::int AS total FROM runs`);
      const [i] = await sql<{ n: number }>(url, `SELECT count(*)::int AS n FROM automation_invocations WHERE run_id IS NOT NULL`);
      return r.open === 0 && r.total >= TIMERS + AUTOMATIONS && i.n >= AUTOMATIONS ? true : undefined;
    }, 250);
    const allDoneMs = Date.now() - due;

    // Timers: each rang once, not before its second, and its run completed.
    const resumedAt: number[] = [];
    let resumes = 0;
    for (const id of runIds) {
      const events = await allEvents(alive[0], id, ADMIN_KEY);
      figures.checkRun(id, events);
      const resumed = events.filter((e) => e.type === 'run.resumed');
      resumes += resumed.length;
      expect({ id, resumed: resumed.length, completed: events.filter((e) => e.type === 'tool.completed').length }).toEqual({ id, resumed: 1, completed: 1 });
      expect(events.at(-1)).toMatchObject({ type: 'run.finished', data: { status: 'completed' } });
      const at = Date.parse(resumed[0].data.occurred_at ?? resumed[0].occurred_at);
      expect(at).toBeGreaterThanOrEqual(due);
      resumedAt.push(at - due);
      figures.runsFinished++;
    }
    // Automations: one invocation each (its slot), one run each, completed; nothing else ran.
    const inv = await sql<{ automation_id: string; n: number; runs: number; started: number }>(
      url,
      `SELECT automation_id, count(*)::int AS n, count(DISTINCT run_id)::int AS runs, count(*) FILTER (WHERE status = 'started')::int AS started FROM automation_invocations GROUP BY automation_id`,
    );
    expect(inv.map((r) => r.automation_id).sort()).toEqual([...automations].sort());
    for (const r of inv) expect(r).toEqual({ automation_id: r.automation_id, n: 1, runs: 1, started: 1 });
    const invocationRuns = await sql<{ id: string; status: string }>(url, `SELECT r.id, r.status FROM automation_invocations i JOIN runs r ON r.id = i.run_id`);
    expect(invocationRuns.map((r) => r.status)).toEqual(new Array(AUTOMATIONS).fill('completed'));
    for (const r of invocationRuns) figures.checkRun(r.id, await allEvents(alive[0], r.id, ADMIN_KEY));
    figures.runsAccepted += invocationRuns.length;
    figures.runsFinished += invocationRuns.length;
    const [{ n: totalRuns }] = await sql<{ n: number }>(url, `SELECT count(*)::int AS n FROM runs`);
    expect(totalRuns).toBe(TIMERS + AUTOMATIONS);
    expect((await sql<{ status: string }>(url, `SELECT DISTINCT status FROM automations`)).map((r) => r.status)).toEqual(['completed']);
    expect([figures.duplicates, figures.gaps, figures.problems]).toEqual([0, 0, []]);

    resumedAt.sort((a, b) => a - b);
    figures.print({
      timers: TIMERS,
      timer_resumes: resumes,
      automations: AUTOMATIONS,
      invocations: inv.reduce((s, r) => s + r.n, 0),
      total_runs: totalRuns,
      setup_margin_ms: setupLeftMs,
      resumed_after_due_ms: { p50: resumedAt[Math.floor(resumedAt.length / 2)], max: resumedAt.at(-1) },
      all_finished_after_due_ms: allDoneMs,
      ...(killed ? { killed_node: killed.node, killed_at_ms_after_due: killed.at, runs_leased_by_killed_node: killed.orphaned } : {}),
    });
    for (const n of ns) await n.kill9();
  }

  it('each timer rings once and each automation fires once across three nodes', async () => {
    await scenario(false);
  }, 420_000);

  it('kill -9 of one node in the due second: still each exactly once, none lost', async () => {
    await scenario(true);
  }, 420_000);
});
