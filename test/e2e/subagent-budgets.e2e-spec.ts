import { createSession, isTerminal, runEvents, script, startRun, userInput, waitForRun } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * Issue 48 part 2: subagent trees stay inside their parent's limits. A parent that ends (any
 * terminal status) ends its subagents' active runs (cancelled, reason `parent_ended`).
 */
describe('subagent trees: a parent bounds its whole tree (#48)', () => {
  let t: TestApp;
  const admin = KEYS.adminA;
  const member = KEYS.memberA1;
  /** A child that keeps calling a tool, slowly, for a long time. */
  const busyChild = (turns = 30, sleepMs = 300) => script([...Array.from({ length: turns }, () => ({ sleep_ms: sleepMs, tool_calls: [{ name: 'get_time', arguments: {} }] })), { text: 'child done' }]);

  beforeAll(async () => {
    t = await startTestApp();
    const lead = await t.call(admin, 'POST', '/v1/agents', { id: 'boss', instructions: 'Delegate.', tools: ['get_time'], subagents: { enabled: true, max_concurrent: 4 } });
    expect(lead.status).toBe(201);
  }, 120_000);

  afterAll(async () => {
    await t?.close();
  });

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
});
