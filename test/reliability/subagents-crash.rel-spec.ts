import { contractOrderProblems } from '../helpers/runs';
import { startHttpToolServer } from '../helpers/tool-servers';
import { ADMIN_KEY, allEvents, freshDatabase, NodeProcess, script, startNode, startRun, tempDir, TERMINAL, until, waitForRunStatus } from './rel-helpers';

/**
 * Subagents across a crash (CONTRACT 16, issue 25): `kill -9` of the only node (a) while the parent
 * waits in `waiting_for_subagents` with its children mid model call, (b) while the children are
 * mid-call of an idempotent http tool with an effect the receiver counts. A restart on the same
 * data finishes parent and children: every run's events are complete and in order, the parent's
 * final answer carries both children's results, and no tool effect happened twice.
 */
describe('crash: kill -9 with subagents running', () => {
  const dir = tempDir();
  let db: Awaited<ReturnType<typeof freshDatabase>> = null;
  const nodes: NodeProcess[] = [];
  let http: Awaited<ReturnType<typeof startHttpToolServer>>;

  beforeAll(async () => {
    db = await freshDatabase();
    http = await startHttpToolServer();
  });
  afterAll(async () => {
    for (const n of nodes) await n.kill9();
    await http?.close();
    await db?.drop();
    dir.remove();
  });

  const node = async (name: string) => {
    const n = await startNode({ name, dataDir: dir.path, databaseUrl: db?.url });
    nodes.push(n);
    return n;
  };
  const session = async (n: NodeProcess, agentId: string) => {
    const s = await n.call('POST', '/v1/sessions', { agent_id: agentId }, {}, ADMIN_KEY);
    expect(s.status).toBe(201);
    return s.body.id as string;
  };
  /** A parent that creates a subagent per child script, waits for all, then answers with what the wait returned. */
  const parentScript = (agentId: string, children: Record<string, string>) =>
    script([
      { tool_calls: Object.entries(children).map(([name, instructions]) => ({ name: 'create_subagent', arguments: { agent_id: agentId, name, instructions } })) },
      { tool_calls: [{ name: 'wait_for_subagents', arguments: {} }] },
      { text: 'final: {{last_tool_result}}' },
    ]);
  /** Every run's events complete and in order (1..n, run.started first, one run.finished last). */
  const checkComplete = async (n: NodeProcess, runIds: string[]) => {
    for (const id of runIds) {
      const events = await allEvents(n, id, ADMIN_KEY);
      expect({ id, problems: contractOrderProblems(events) }).toEqual({ id, problems: [] });
    }
  };
  const finalText = async (n: NodeProcess, run: any) => {
    const m = await n.call('GET', `/v1/sessions/${run.session_id}/messages/${run.final_message_id}`, undefined, {}, ADMIN_KEY);
    expect(m.status).toBe(200);
    return (m.body.content as any[]).map((p) => p.text ?? '').join('');
  };

  it('(a) kill -9 while the parent waits for subagents that are mid model call: all finish after a restart, the answer has both results', async () => {
    const a = await node('sub-a');
    expect((await a.call('POST', '/v1/agents', { id: 'rel_worker', tools: [] }, {}, ADMIN_KEY)).status).toBe(201);
    expect((await a.call('POST', '/v1/agents', { id: 'rel_lead', tools: [], subagents: { enabled: true, agents: ['rel_worker'], max_concurrent: 4 } }, {}, ADMIN_KEY)).status).toBe(201);
    const sid = await session(a, 'rel_lead');
    const slow = (text: string) => script([{ sleep_ms: 8_000, text }]);
    const res = await startRun(a, sid, parentScript('rel_worker', { alpha: slow('alpha-result-1'), beta: slow('beta-result-2') }), ADMIN_KEY);
    expect(res.status).toBe(202);
    const parentId = res.body.run_id as string;
    await waitForRunStatus(a, parentId, (r) => r.status === 'waiting_for_subagents', 60_000, ADMIN_KEY);
    const created = (await allEvents(a, parentId, ADMIN_KEY)).filter((e) => e.type === 'subagent.created').map((e) => e.data.run_id as string);
    expect(created).toHaveLength(2);
    // Both children are mid model call (their turn has begun) when the node dies.
    await until('both children mid model call', 30_000, async () => {
      const started = await Promise.all(created.map(async (id) => (await allEvents(a, id, ADMIN_KEY)).some((e) => e.type === 'message.started')));
      return started.every(Boolean) ? true : undefined;
    });
    expect((await waitForRunStatus(a, parentId, () => true, 1000, ADMIN_KEY)).status).toBe('waiting_for_subagents');
    await a.kill9();

    const b = await node('sub-b');
    const parent = await waitForRunStatus(b, parentId, (r) => TERMINAL.includes(r.status), 120_000, ADMIN_KEY);
    expect(parent.status).toBe('completed');
    const children = await Promise.all(created.map((id) => waitForRunStatus(b, id, (r) => TERMINAL.includes(r.status), 30_000, ADMIN_KEY)));
    expect(children.map((c) => c.status)).toEqual(['completed', 'completed']);
    const answer = await finalText(b, parent);
    expect(answer).toContain('alpha-result-1');
    expect(answer).toContain('beta-result-2');
    await checkComplete(b, [parentId, ...created]);
    const events = await allEvents(b, parentId, ADMIN_KEY);
    // Each child's end reached the parent once; the wait answered once.
    expect(events.filter((e) => e.type === 'subagent.completed').map((e) => e.data.run_id).sort()).toEqual([...created].sort());
    expect(events.filter((e) => e.type === 'tool.completed' && e.data.tool_name === 'wait_for_subagents')).toHaveLength(1);
    await b.kill9();
  }, 300_000);

  it("(b) kill -9 during the children's http tool calls: re-run with the same keys, one effect each, parent and children finish", async () => {
    const a = await node('sub-c');
    const charge = { type: 'http', name: 'charge', description: 'Charges once per key.', parameters: { type: 'object' }, url: `${http.url}/once`, idempotent: true, timeout_ms: 20_000 };
    expect((await a.call('POST', '/v1/agents', { id: 'rel_charger', tools: [charge] }, {}, ADMIN_KEY)).status).toBe(201);
    expect((await a.call('POST', '/v1/agents', { id: 'rel_billing_lead', tools: [], subagents: { enabled: true, agents: ['rel_charger'], max_concurrent: 4 } }, {}, ADMIN_KEY)).status).toBe(201);
    const sid = await session(a, 'rel_billing_lead');
    const child = (text: string) => script([{ tool_calls: [{ name: 'charge', arguments: {} }] }, { text }]);
    const before = http.effects.size;
    const res = await startRun(a, sid, parentScript('rel_charger', { c1: child('charged-one'), c2: child('charged-two') }), ADMIN_KEY);
    expect(res.status).toBe(202);
    const parentId = res.body.run_id as string;
    await waitForRunStatus(a, parentId, (r) => r.status === 'waiting_for_subagents', 60_000, ADMIN_KEY);
    const created = (await allEvents(a, parentId, ADMIN_KEY)).filter((e) => e.type === 'subagent.created').map((e) => e.data.run_id as string);
    expect(created).toHaveLength(2);
    // Both calls reached the receiver (it answers the first of a key after 6 s) and their tool.started is durable.
    await until('both charges mid-call', 30_000, async () => (http.effects.size >= before + 2 ? true : undefined));
    await until('tool.started of both children', 10_000, async () => {
      const ok = await Promise.all(created.map(async (id) => (await allEvents(a, id, ADMIN_KEY)).some((e) => e.type === 'tool.started')));
      return ok.every(Boolean) ? true : undefined;
    });
    expect((await waitForRunStatus(a, parentId, () => true, 1000, ADMIN_KEY)).status).toBe('waiting_for_subagents');
    await a.kill9();

    const b = await node('sub-d');
    const parent = await waitForRunStatus(b, parentId, (r) => TERMINAL.includes(r.status), 120_000, ADMIN_KEY);
    expect(parent.status).toBe('completed');
    const children = await Promise.all(created.map((id) => waitForRunStatus(b, id, (r) => TERMINAL.includes(r.status), 30_000, ADMIN_KEY)));
    expect(children.map((c) => c.status)).toEqual(['completed', 'completed']);
    const answer = await finalText(b, parent);
    expect(answer).toContain('charged-one');
    expect(answer).toContain('charged-two');
    await checkComplete(b, [parentId, ...created]);

    // 0 duplicate effects: each child's call was sent again with its own key, applied once.
    const keys: string[] = [];
    for (const id of created) {
      const events = await allEvents(b, id, ADMIN_KEY);
      const call = events.find((e) => e.type === 'tool.requested' && e.data.tool_name === 'charge');
      keys.push(`${id}:${call.data.tool_call_id}`);
      expect(events.filter((e) => e.type === 'tool.completed' && e.data.tool_name === 'charge')).toHaveLength(1);
    }
    const mine = [...http.effects.entries()].filter(([k]) => created.some((id) => k.startsWith(`${id}:`)));
    expect(mine.sort()).toEqual(keys.map((k) => [k, 1]).sort());
    // The restart did re-send them (same keys): the effect count stayed 1.
    const sent = http.seen.filter((s) => s.path === '/once' && keys.includes(String(s.headers['idempotency-key'])));
    expect(sent.length).toBeGreaterThanOrEqual(keys.length + 1);
    const events = await allEvents(b, parentId, ADMIN_KEY);
    expect(events.filter((e) => e.type === 'subagent.completed')).toHaveLength(2);
    await b.kill9();
  }, 300_000);
});
