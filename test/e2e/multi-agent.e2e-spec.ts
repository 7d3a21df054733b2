import { contractOrderProblems, createSession, isTerminal, runEvents, script, startRun, userInput, waitForRun } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * Handoffs (CONTRACT 16) on the native API: agent definitions name the agents they may hand the
 * run to (checked in the tenant, pinned with the version), the model calls `transfer_to_<id>`,
 * the run continues with the target (event `agent.handoff`, `current_agent`), the session's next
 * run starts with it, and an unlisted target is a tool error the model reads.
 */
describe('multi-agent: handoffs (CONTRACT 16)', () => {
  let t: TestApp;
  const admin = KEYS.adminA;
  const member = KEYS.memberA1;

  beforeAll(async () => {
    t = await startTestApp();
    const billing = await t.call(admin, 'POST', '/v1/agents', { id: 'billing_agent', description: 'Billing questions.', instructions: 'You handle billing.', tools: ['get_order'] });
    expect(billing.status).toBe(201);
    const triage = await t.call(admin, 'POST', '/v1/agents', { id: 'triage_agent', description: 'Routes.', instructions: 'Route the customer.', tools: ['get_time'], handoffs: ['billing_agent'] });
    expect(triage.status).toBe(201);
    expect(triage.body.handoffs).toEqual([{ agent_id: 'billing_agent', version: '1' }]);
    // The handoff is offered as a tool, not listed among the agent's tools.
    expect(triage.body.tools.map((x: { name: string }) => x.name)).toEqual(['get_time']);
    // A later version of the target does not change what triage_agent v1 pinned.
    const v2 = await t.call(admin, 'POST', '/v1/agents/billing_agent/versions', { instructions: 'Billing, v2.', tools: ['get_order'] });
    expect(v2.status).toBe(201);
  }, 120_000);

  afterAll(async () => {
    await t?.close();
  });

  async function runToEnd(key: string, sessionId: string, text: string) {
    const res = await startRun(t, key, sessionId, { input: userInput(text) });
    expect(res.status).toBe(202);
    const run = await waitForRun(t, key, res.body.run_id, isTerminal);
    const events = await runEvents(t, key, run.id);
    expect(contractOrderProblems(events)).toEqual([]);
    return { run, events };
  }

  it('a handoff target must be an agent of the tenant (400 naming the entry)', async () => {
    const unknown = await t.call(admin, 'POST', '/v1/agents', { id: 'bad_router', tools: [], handoffs: ['billing_agent', 'no_such_agent'] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe('invalid_request');
    expect(unknown.body.error.details.errors).toEqual([expect.objectContaining({ field: 'handoffs[1]' })]);
    // Another tenant's agent does not exist for this one.
    const foreign = await t.call(KEYS.adminB, 'POST', '/v1/agents', { id: 'router_b', tools: [], handoffs: ['billing_agent'] });
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.details.errors).toEqual([expect.objectContaining({ field: 'handoffs[0]' })]);
    const self = await t.call(admin, 'POST', '/v1/agents', { id: 'self_router', tools: [], handoffs: ['self_router'] });
    expect(self.status).toBe(400);
    const inline = await t.call(admin, 'POST', '/v1/sessions', { agent: { handoffs: ['no_such_agent'] } });
    expect(inline.status).toBe(400);
    expect(inline.body.error.details.errors).toEqual([expect.objectContaining({ field: 'agent.handoffs[0]' })]);
  });

  it('transfer_to_<agent> hands the run over: agent.handoff, current_agent, the history kept; the next run starts with the target', async () => {
    const sessionId = await createSession(t, member, { agent_id: 'triage_agent' });
    const { run, events } = await runToEnd(
      member,
      sessionId,
      script([{ tool_calls: [{ name: 'transfer_to_billing_agent', arguments: { reason: 'a refund' } }] }, { text: 'Billing here.' }]),
    );
    expect(run).toMatchObject({
      status: 'completed',
      agent: { id: 'triage_agent', version: '1' },
      current_agent: { id: 'billing_agent', version: '1' },
      step_count: 2,
    });
    const handoff = events.filter((e) => e.type === 'agent.handoff');
    expect(handoff).toHaveLength(1);
    const call = events.find((e) => e.type === 'tool.requested');
    expect(handoff[0].data).toEqual({ from_agent: 'triage_agent', to_agent: 'billing_agent', reason: 'a refund', tool_call_id: call.data.tool_call_id });
    // The call completes before the handoff; the target's turn follows it.
    const types = events.map((e) => e.type);
    expect(types.indexOf('tool.completed')).toBeLessThan(types.indexOf('agent.handoff'));
    expect(types.lastIndexOf('message.started')).toBeGreaterThan(types.indexOf('agent.handoff'));
    // The history is kept: the session shows the call, its result and the target's answer.
    const messages = await t.call(member, 'GET', `/v1/sessions/${sessionId}/messages?limit=100`);
    expect(messages.status).toBe(200);
    const roles = messages.body.data.map((m: { role: string }) => m.role);
    expect(roles).toEqual(['user', 'assistant', 'tool', 'assistant']);

    // The session's next run starts with billing_agent, which lists no handoffs: transfer_to_ is a tool error.
    const next = await runToEnd(member, sessionId, script([{ tool_calls: [{ name: 'transfer_to_triage_agent', arguments: {} }] }, { text: 'Still billing.' }]));
    expect(next.run).toMatchObject({ status: 'completed', agent: { id: 'triage_agent', version: '1' }, current_agent: { id: 'billing_agent', version: '1' } });
    const failed = next.events.find((e) => e.type === 'tool.failed');
    expect(failed.data).toMatchObject({ tool_name: 'transfer_to_triage_agent', error: { code: 'handoff_not_allowed' } });
    expect(next.events.some((e) => e.type === 'agent.handoff')).toBe(false);
  });

  it('a handoff to an agent the current agent does not list is a tool error shown to the model; the run goes on', async () => {
    const sessionId = await createSession(t, member, { agent_id: 'triage_agent' });
    const { run, events } = await runToEnd(member, sessionId, script([{ tool_calls: [{ name: 'transfer_to_assistant', arguments: {} }] }, { text: 'Staying.' }]));
    expect(run).toMatchObject({ status: 'completed', current_agent: { id: 'triage_agent', version: '1' }, step_count: 2 });
    expect(events.find((e) => e.type === 'tool.failed').data.error).toMatchObject({ code: 'handoff_not_allowed' });
    // The model read the error as the call's result.
    const messages = await t.call(member, 'GET', `/v1/sessions/${sessionId}/messages?limit=100`);
    const tool = messages.body.data.find((m: { role: string }) => m.role === 'tool');
    expect(tool.content[0]).toMatchObject({ type: 'tool_result', ok: false, error: { code: 'handoff_not_allowed' } });
  });

  it('an inline agent may hand off too; the handoff counts toward the run\'s max_steps', async () => {
    const sessionId = await createSession(t, member, { agent: { instructions: 'Route.', handoffs: ['billing_agent'] } });
    const res = await startRun(t, member, sessionId, {
      input: userInput(script([{ tool_calls: [{ name: 'transfer_to_billing_agent', arguments: {} }] }, { text: 'never' }])),
      limits: { max_steps: 1 },
    });
    expect(res.status).toBe(202);
    const run = await waitForRun(t, member, res.body.run_id, isTerminal);
    // Created after billing_agent v2: the inline agent pinned v2.
    expect(run).toMatchObject({ status: 'terminated', termination_reason: 'max_steps', current_agent: { id: 'billing_agent', version: '2' } });
  });
});
