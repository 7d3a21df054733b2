import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSession, isTerminal, runEvents, script, startRun, userInput, waitForRun } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * Issue 48 part 2: subagent trees stay inside their parent's limits. A parent that ends (any
 * terminal status) ends its subagents' active runs (cancelled, reason `parent_ended`); a subagent
 * run gets a share of what its parent has left of each budget (held from the parent while it is
 * active); `max_subagent_depth` and `max_subagents_per_run` bound the tree's shape (the tool error
 * `subagent_limit`).
 */
describe('subagent trees: a parent bounds its whole tree (#48)', () => {
  let t: TestApp;
  const admin = KEYS.adminA;
  const member = KEYS.memberA1;
  /** A child that keeps calling a tool, slowly, for a long time. */
  const busyChild = (turns = 30, sleepMs = 300) => script([...Array.from({ length: turns }, () => ({ sleep_ms: sleepMs, tool_calls: [{ name: 'get_time', arguments: {} }] })), { text: 'child done' }]);

  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'subagent-budgets-'));
    const file = join(dir, 'models.json');
    // Priced so that every call costs something (~0.002 USD a call of a subagent below), its estimate (500 output tokens) above what it costs.
    writeFileSync(file, JSON.stringify([{ id: 'scripted', provider: 'scripted', model: 'scripted', price: { input_per_mtok: 5, output_per_mtok: 5 }, max_output_tokens: 500 }]));
    t = await startTestApp({ MODELS_FILE: file });
    for (const key of [admin, KEYS.adminB]) {
      const lead = await t.call(key, 'POST', '/v1/agents', { id: 'boss', instructions: 'Delegate.', tools: ['get_time'], subagents: { enabled: true, max_concurrent: 4 } });
      expect(lead.status).toBe(201);
    }
  }, 120_000);

  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The runs below `runId` (breadth first), read from each run's subagent.created events. */
  async function treeOf(key: string, runId: string): Promise<any[]> {
    const out: any[] = [];
    for (let queue = [runId]; queue.length > 0; ) {
      const id = queue.shift()!;
      const kids = (await runEvents(t, key, id)).filter((e) => e.type === 'subagent.created').map((e) => e.data.run_id);
      for (const k of kids) out.push(await waitForRun(t, key, k, isTerminal, 60_000));
      queue.push(...kids);
    }
    return out;
  }

  async function childOf(parentRunId: string): Promise<string> {
    const created = (await runEvents(t, member, parentRunId)).find((e) => e.type === 'subagent.created');
    expect(created).toBeDefined();
    return created.data.run_id;
  }

  it('a parent that completes while its subagent still works cancels it (reason parent_ended, requested_by the parent)', async () => {
    const sid = await createSession(t, member, { agent_id: 'boss' });
    const r = await startRun(t, member, sid, {
      input: userInput(script([{ tool_calls: [{ name: 'create_subagent', arguments: { name: 'busy', instructions: busyChild() } }] }, { text: 'I am done' }])),
    });
    expect(r.status).toBe(202);
    const parent = await waitForRun(t, member, r.body.run_id, isTerminal, 60_000);
    expect(parent.status).toBe('completed');
    const childId = await childOf(parent.id);
    const child = await waitForRun(t, member, childId, isTerminal, 30_000);
    expect(child.status).toBe('cancelled');
    // Well before its 30 slow tool calls.
    expect(child.usage.tool_calls).toBeLessThan(10);
    const cancel = (await runEvents(t, member, childId)).find((e) => e.type === 'run.cancel_requested');
    expect(cancel.data).toEqual({ requested_by: `run:${parent.id}`, reason: 'parent_ended' });
  }, 120_000);

  it('max_tool_calls 2 bounds the tree: the subagent gets none of them, the parent ends tool_budget with 2 tool calls in all (was 22 more in the child)', async () => {
    const sid = await createSession(t, member, { agent_id: 'boss' });
    const r = await startRun(t, member, sid, {
      input: userInput(
        script([
          { tool_calls: [{ name: 'create_subagent', arguments: { name: 'busy', instructions: busyChild(30, 100) } }] },
          { tool_calls: [{ name: 'get_time', arguments: {} }] },
          { tool_calls: [{ name: 'get_time', arguments: {} }] },
          { text: 'never' },
        ]),
      ),
      limits: { max_tool_calls: 2 },
    });
    const parent = await waitForRun(t, member, r.body.run_id, isTerminal, 60_000);
    expect(parent).toMatchObject({ status: 'terminated', termination_reason: 'tool_budget' });
    const [child] = await treeOf(member, parent.id);
    // Half of what was left after the create (2 - 1 = 1), rounded down: no tool call for the child.
    expect(child.limits).toMatchObject({ max_tool_calls: 0, max_subagent_depth: 2 });
    expect(child.usage.tool_calls).toBe(0);
    expect(['terminated', 'cancelled']).toContain(child.status);
    const own = (await runEvents(t, member, parent.id)).filter((e) => e.type === 'tool.started').length;
    console.log(`subagent tree under max_tool_calls 2: parent ${own} tool calls, child ${child.usage.tool_calls} (${child.status} ${child.termination_reason ?? ''})`);
    expect(own + child.usage.tool_calls).toBeLessThanOrEqual(2);
  }, 120_000);

  it('max_cost "0.03" bounds the tree: three subagents fanned out and the parent spend at most 0.03 in all', async () => {
    // Tenant B spends nothing else: its usage total is this tree's.
    const sid = await createSession(t, KEYS.adminB, { agent_id: 'boss' });
    // 12 model calls of ~0.0017 USD each (the context grows): ~0.02 a subagent, ~0.06 for three without a share of the budget.
    const spender = script(Array.from({ length: 12 }, () => ({ tool_calls: [{ name: 'get_time', arguments: {} }] })));
    const r = await startRun(t, KEYS.adminB, sid, {
      input: userInput(
        script([
          {
            tool_calls: [
              { name: 'create_subagent', arguments: { name: 's1', instructions: spender } },
              { name: 'create_subagent', arguments: { name: 's2', instructions: spender } },
              { name: 'create_subagent', arguments: { name: 's3', instructions: spender } },
            ],
          },
          { tool_calls: [{ name: 'wait_for_subagents', arguments: {} }] },
          ...Array.from({ length: 8 }, () => ({ text: 'y'.repeat(200), tool_calls: [{ name: 'get_time', arguments: {} }] })),
          { text: 'done' },
        ]),
      ),
      limits: { max_cost: '0.03', max_steps: 20 },
    });
    const parent = await waitForRun(t, KEYS.adminB, r.body.run_id, isTerminal, 90_000);
    const kids = await treeOf(KEYS.adminB, parent.id);
    expect(kids).toHaveLength(3);
    // An equal share each (three in one turn: a quarter of what was left after the parent's first call; the parent keeps a quarter).
    const shares = kids.map((k) => Number(k.limits.max_cost));
    expect(shares[0]).toBeLessThan(0.03 / 4);
    for (const share of shares) expect(share).toBeCloseTo(shares[0], 9);
    const usage = await t.call(KEYS.adminB, 'GET', '/v1/admin/usage?group_by=model');
    const total = Number(usage.body.total_cost.amount);
    console.log(
      `subagent tree under max_cost 0.03: spent ${total} USD in all (parent ${parent.status} ${parent.termination_reason ?? ''}, ` +
        `children ${kids.map((k) => `${k.usage.estimated_cost.amount} of ${k.limits.max_cost} ${k.status}`).join(', ')})`,
    );
    expect(total).toBeGreaterThan(0.005);
    expect(total).toBeLessThanOrEqual(0.03);
    // The parent's usage counts the children's that ended before it did.
    expect(Number(parent.usage.estimated_cost.amount)).toBeLessThanOrEqual(total);
  }, 180_000);

  /** A chain: each level creates one subagent running the next level, waits for it, answers. */
  function chain(levels: number, level = 1): string {
    const turns: unknown[] = [];
    if (level <= levels) turns.push({ tool_calls: [{ name: 'create_subagent', arguments: { name: `l${level}`, instructions: chain(levels, level + 1) } }] });
    turns.push({ tool_calls: [{ name: 'wait_for_subagents', arguments: {} }] }, { text: `level ${level - 1} done` });
    return script(turns);
  }

  it('max_subagent_depth (default 3): a 6-level chain stops 3 levels down, the deepest create_subagent is the tool error subagent_limit', async () => {
    const sid = await createSession(t, member, { agent_id: 'boss' });
    const r = await startRun(t, member, sid, { input: userInput(chain(6)) });
    const root = await waitForRun(t, member, r.body.run_id, isTerminal, 90_000);
    expect(root.limits).toMatchObject({ max_subagent_depth: 3, max_subagents_per_run: 20 });
    expect(root.status).toBe('completed');
    const below = await treeOf(member, root.id);
    expect(below.map((k) => k.limits.max_subagent_depth)).toEqual([2, 1, 0]);
    expect(below.map((k) => k.status)).toEqual(['completed', 'completed', 'completed']);
    const refused = (await runEvents(t, member, below[2].id)).find((e) => e.type === 'tool.failed' && e.data.tool_name === 'create_subagent');
    expect(refused.data.error).toMatchObject({ code: 'subagent_limit', retryable: false, message: expect.stringContaining('max_subagent_depth') });
  }, 120_000);

  it('max_subagents_per_run: the third subagent run of a tree limited to 2 is the tool error subagent_limit; the run goes on', async () => {
    const sid = await createSession(t, member, { agent_id: 'boss' });
    const quick = script([{ text: 'ok' }]);
    const turns = ['a', 'b', 'c'].flatMap((n) => [{ tool_calls: [{ name: 'create_subagent', arguments: { name: n, instructions: quick } }] }, { tool_calls: [{ name: 'wait_for_subagents', arguments: {} }] }]);
    const r = await startRun(t, member, sid, { input: userInput(script([...turns, { text: 'finished' }])), limits: { max_subagents_per_run: 2, max_steps: 10 } });
    const root = await waitForRun(t, member, r.body.run_id, isTerminal, 90_000);
    expect(root.status).toBe('completed');
    const events = await runEvents(t, member, root.id);
    expect(events.filter((e) => e.type === 'subagent.created').map((e) => e.data.name)).toEqual(['a', 'b']);
    const refused = events.filter((e) => e.type === 'tool.failed' && e.data.tool_name === 'create_subagent');
    expect(refused).toHaveLength(1);
    expect(refused[0].data.error).toMatchObject({ code: 'subagent_limit', message: expect.stringContaining('max_subagents_per_run') });
    // The children could start none of their own: their share of the 2 was 0.
    expect((await treeOf(member, root.id)).map((k) => k.limits.max_subagents_per_run)).toEqual([0, 0]);
  }, 120_000);

  it('limits.max_subagent_depth and max_subagents_per_run are taken at their bounds and shown on the run', async () => {
    const sid = await createSession(t, member, { agent_id: 'boss' });
    const r = await startRun(t, member, sid, { input: userInput('hi'), limits: { max_subagent_depth: 0, max_subagents_per_run: 1000 } });
    expect(r.status).toBe(202);
    expect((await waitForRun(t, member, r.body.run_id, isTerminal)).limits).toMatchObject({ max_subagent_depth: 0, max_subagents_per_run: 1000 });
  });

  it.each([
    [{ max_subagent_depth: -1 }, 'limits.max_subagent_depth'],
    [{ max_subagent_depth: 11 }, 'limits.max_subagent_depth'],
    [{ max_subagent_depth: 1.5 }, 'limits.max_subagent_depth'],
    [{ max_subagents_per_run: 1001 }, 'limits.max_subagents_per_run'],
    [{ max_subagents_per_run: 'many' }, 'limits.max_subagents_per_run'],
  ])('limits %j is 400 naming %s', async (limits, field) => {
    const sid = await createSession(t, member, { agent_id: 'boss' });
    const r = await startRun(t, member, sid, { input: userInput('hi'), limits });
    expect(r.status).toBe(400);
    expect(r.body.error.details.errors.map((e: any) => e.field)).toEqual([field]);
  });
});
