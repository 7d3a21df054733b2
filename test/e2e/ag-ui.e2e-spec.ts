import { HttpAgent, verifyEvents } from '@ag-ui/client';
import type { BaseEvent } from '@ag-ui/core';
import { from } from 'rxjs';
import { createSession, isTerminal, runEvents, script, waitForRun } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * AG-UI 1.0 (CONTRACT section 15) driven by the real `@ag-ui/client` 1.0 `HttpAgent`, whose
 * pipeline validates every event against `@ag-ui/core`'s schemas and runs `verifyEvents` on the
 * stream (a violation rejects `runAgent`). Every captured stream is also replayed through
 * `verifyEvents` on its own and checked for the rules the issue names.
 */
describe('AG-UI 1.0 over durable runs (HttpAgent, verifier on)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ APPROVAL_TTL_MS: '120000' });
  });
  afterAll(async () => {
    await t.close();
  });

  let n = 0;
  const uniq = (p: string) => `${p}-${Date.now()}-${++n}`;

  function agentFor(key: string, threadId: string, agentId = 'support_agent') {
    return new HttpAgent({ url: `${t.url}/ag-ui/agents/${agentId}`, headers: { Authorization: `Bearer ${key}` }, threadId });
  }

  interface Ran {
    events: BaseEvent[];
    finished: any;
    newMessages: any[];
  }

  /** One `runAgent`, collecting the events the client applied (after its own verification). */
  async function run(agent: HttpAgent, params: Record<string, unknown>, onEvent?: (e: any) => void): Promise<Ran> {
    const events: BaseEvent[] = [];
    const { newMessages } = await agent.runAgent(params as any, {
      onEvent: ({ event }) => {
        events.push(event);
        onEvent?.(event);
      },
    });
    await expectVerified(events);
    const finished = events.find((e) => e.type === 'RUN_FINISHED' || e.type === 'RUN_ERROR');
    return { events, finished, newMessages };
  }

  /** The client's verifier over the captured stream again, plus the rules of the issue. */
  async function expectVerified(events: BaseEvent[]) {
    // (@ag-ui/client has its own copy of rxjs: its operator is applied as a plain function.)
    const out = await new Promise<BaseEvent[]>((resolve, reject) => {
      const got: BaseEvent[] = [];
      verifyEvents()(from(events) as any).subscribe({ next: (e) => got.push(e), error: reject, complete: () => resolve(got) });
    });
    expect(out).toHaveLength(events.length);
    expect(events[0].type).toBe('RUN_STARTED');
    const last = events[events.length - 1].type;
    expect(['RUN_FINISHED', 'RUN_ERROR']).toContain(last);
    expect(events.filter((e) => e.type === 'RUN_FINISHED' || e.type === 'RUN_ERROR')).toHaveLength(1);
    const open = new Set<string>();
    for (const e of events as any[]) {
      if (e.type === 'TEXT_MESSAGE_START') open.add(`text:${e.messageId}`);
      if (e.type === 'TEXT_MESSAGE_CONTENT') expect(open.has(`text:${e.messageId}`)).toBe(true);
      if (e.type === 'TEXT_MESSAGE_END') expect(open.delete(`text:${e.messageId}`)).toBe(true);
      if (e.type === 'TOOL_CALL_START') open.add(`tool:${e.toolCallId}`);
      if (e.type === 'TOOL_CALL_ARGS') expect(open.has(`tool:${e.toolCallId}`)).toBe(true);
      if (e.type === 'TOOL_CALL_END') expect(open.delete(`tool:${e.toolCallId}`)).toBe(true);
      // Steps are per owner: a subagent's turn_1 may run beside its parent's (or another subagent's).
      if (e.type === 'STEP_STARTED') open.add(`step:${e.subagentRunId ?? ''}:${e.stepName}`);
      if (e.type === 'STEP_FINISHED') expect(open.delete(`step:${e.subagentRunId ?? ''}:${e.stepName}`)).toBe(true);
      if (e.type === 'SUBAGENT_STARTED') open.add(`subagent:${e.subagentRunId}`);
      if (e.type === 'SUBAGENT_FINISHED' || e.type === 'SUBAGENT_ERROR') expect(open.delete(`subagent:${e.subagentRunId}`)).toBe(true);
    }
    expect([...open]).toEqual([]);
  }

  const textOf = (events: BaseEvent[]) =>
    (events as any[])
      .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
      .map((e) => e.delta)
      .join('');

  async function runsOf(key: string, sessionId: string): Promise<any[]> {
    const r = await t.call(key, 'GET', `/v1/sessions/${sessionId}/runs?limit=100`);
    expect(r.status).toBe(200);
    return r.body.data;
  }

  it('a plain answer: the text events reassemble the final text, which the client keeps as a message', async () => {
    const sid = await createSession(t, KEYS.memberA1);
    const agent = agentFor(KEYS.memberA1, sid);
    agent.addMessage({ id: 'u1', role: 'user', content: script([{ text: 'Hello from a durable run.', chunk_size: 5 }]) });
    const r = await run(agent, { runId: uniq('plain') });
    expect(r.finished).toMatchObject({ type: 'RUN_FINISHED', threadId: sid, outcome: { type: 'success' } });
    expect(textOf(r.events)).toBe('Hello from a durable run.');
    const types = r.events.map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(['RUN_STARTED', 'STEP_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'STEP_FINISHED', 'RUN_FINISHED']));
    expect(r.newMessages).toEqual([expect.objectContaining({ role: 'assistant', content: 'Hello from a durable run.' })]);
    // The native run behind it: completed, with the same final text.
    const [native] = await runsOf(KEYS.memberA1, sid);
    expect(native.status).toBe('completed');
    const final = await t.call(KEYS.memberA1, 'GET', `/v1/sessions/${sid}/messages/${native.final_message_id}`);
    expect(final.body.content[0].text).toBe('Hello from a durable run.');
    // The request is in the audit trail like any other state-changing one, naming the run.
    const audit = await t.call(KEYS.adminA, 'GET', `/v1/admin/audit?run_id=${native.id}&limit=100`);
    expect(audit.body.data).toEqual(expect.arrayContaining([expect.objectContaining({ action: 'POST /ag-ui/agents/:agent_id', session_id: sid, run_id: native.id, outcome: 'ok' })]));
  });

  it('a server tool call: TOOL_CALL_START/ARGS/END and TOOL_CALL_RESULT, then the answer', async () => {
    const agent = agentFor(KEYS.memberA1, uniq('thread-tool'));
    agent.addMessage({ id: 'u1', role: 'user', content: script([{ tool_calls: [{ id: 'call_time_1', name: 'get_time', arguments: { timezone: 'UTC' } }] }, { text: 'It is time.' }]) });
    const r = await run(agent, { runId: uniq('tool') });
    expect(r.finished.outcome).toEqual({ type: 'success' });
    const ev = r.events as any[];
    const start = ev.find((e) => e.type === 'TOOL_CALL_START');
    expect(start).toMatchObject({ toolCallId: 'call_time_1', toolCallName: 'get_time' });
    expect(JSON.parse(ev.filter((e) => e.type === 'TOOL_CALL_ARGS').map((e) => e.delta).join(''))).toEqual({ timezone: 'UTC' });
    expect(ev.some((e) => e.type === 'TOOL_CALL_END' && e.toolCallId === 'call_time_1')).toBe(true);
    const result = ev.find((e) => e.type === 'TOOL_CALL_RESULT');
    expect(result).toMatchObject({ toolCallId: 'call_time_1', role: 'tool' });
    expect(typeof JSON.parse(result.content)).toBe('object');
    expect(ev.indexOf(result)).toBeGreaterThan(ev.indexOf(start));
    expect(textOf(r.events)).toBe('It is time.');
    expect(ev.filter((e) => e.type === 'STEP_STARTED')).toHaveLength(2);
    // The client assembled the assistant's tool call and the tool message from the events.
    expect(r.newMessages).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ role: 'assistant', toolCalls: [expect.objectContaining({ id: 'call_time_1', function: expect.objectContaining({ name: 'get_time' }) })] }),
        expect.objectContaining({ role: 'tool', toolCallId: 'call_time_1' }),
      ]),
    );
  });

  describe('subagents (CONTRACT 16)', () => {
    beforeAll(async () => {
      const lead = await t.call(KEYS.adminA, 'POST', '/v1/agents', { id: 'agui_lead', instructions: 'Delegate.', tools: ['get_time'], subagents: { enabled: true } });
      expect(lead.status).toBe(201);
    });
    const by = (events: BaseEvent[], sub: string | undefined) => (events as any[]).filter((e) => e.subagentRunId === sub);

    it('a run that spawns subagents and waits: SUBAGENT_STARTED, their text and tool events with subagentRunId, SUBAGENT_FINISHED / SUBAGENT_ERROR, then the parent goes on', async () => {
      const agent = agentFor(KEYS.memberA1, uniq('thread-fanout'), 'agui_lead');
      const north = script([{ sleep_ms: 200, tool_calls: [{ name: 'get_time', arguments: { timezone: 'UTC' } }] }, { text: 'north is clear', chunk_size: 4 }]);
      const south = script([{ sleep_ms: 400, text: 'south is busy' }]);
      const broken = script([{ error: { code: 'model_refusal', message: 'no' } }]);
      agent.addMessage({
        id: 'u1',
        role: 'user',
        content: script([
          {
            tool_calls: [
              { name: 'create_subagent', arguments: { name: 'north', instructions: north } },
              { name: 'create_subagent', arguments: { name: 'south', instructions: south } },
              { name: 'create_subagent', arguments: { name: 'broken', instructions: broken } },
            ],
          },
          { tool_calls: [{ name: 'wait_for_subagents', arguments: {} }] },
          { text: 'Both regions reported.' },
        ]),
      });
      const r = await run(agent, { runId: uniq('fanout') });
      expect(r.finished).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
      const ev = r.events as any[];
      const started = ev.filter((e) => e.type === 'SUBAGENT_STARTED');
      expect(started.map((e) => e.name)).toEqual(['north', 'south', 'broken']);
      const creates = ev.filter((e) => e.type === 'TOOL_CALL_START' && e.toolCallName === 'create_subagent' && e.subagentRunId === undefined);
      expect(started.map((e) => e.parentToolCallId)).toEqual(creates.map((e) => e.toolCallId));
      const [n, s, b] = started.map((e) => e.subagentRunId);
      expect(n).toMatch(/^run_/);
      // Every event of a subagent carries its subagentRunId (the native child run), between its start and its end.
      for (const id of [n, s, b]) {
        const own = by(r.events, id);
        expect(own[0].type).toBe('SUBAGENT_STARTED');
        expect(['SUBAGENT_FINISHED', 'SUBAGENT_ERROR']).toContain(own[own.length - 1].type);
        expect(ev.indexOf(own[0])).toBeLessThan(ev.indexOf(own[own.length - 1]));
      }
      // (Consecutive TEXT_MESSAGE_CONTENT counted once: how many deltas the native run keeps is its own business.)
      expect(by(r.events, n).map((e) => e.type).filter((x, i, all) => x !== 'TEXT_MESSAGE_CONTENT' || all[i - 1] !== x)).toEqual([
        'SUBAGENT_STARTED',
        'STEP_STARTED',
        'TOOL_CALL_START',
        'TOOL_CALL_ARGS',
        'TOOL_CALL_END',
        'STEP_FINISHED',
        'TOOL_CALL_RESULT',
        'STEP_STARTED',
        'TEXT_MESSAGE_START',
        'TEXT_MESSAGE_CONTENT',
        'TEXT_MESSAGE_END',
        'STEP_FINISHED',
        'SUBAGENT_FINISHED',
      ]);
      expect(textOf(by(r.events, n))).toBe('north is clear');
      expect(by(r.events, n).find((e) => e.type === 'TOOL_CALL_START')).toMatchObject({ toolCallName: 'get_time' });
      expect(by(r.events, n).pop()).toMatchObject({ outcome: { type: 'success' }, result: 'north is clear' });
      expect(by(r.events, s).pop()).toMatchObject({ type: 'SUBAGENT_FINISHED', result: 'south is busy' });
      expect(by(r.events, b).pop()).toMatchObject({ type: 'SUBAGENT_ERROR', code: 'model_refusal', message: expect.any(String) });
      // The parent waited: its wait's result and its answer come after every subagent's end.
      const waited = ev.find((e) => e.type === 'TOOL_CALL_RESULT' && e.subagentRunId === undefined && creates.every((c) => c.toolCallId !== e.toolCallId));
      const ends = ev.filter((e) => e.type === 'SUBAGENT_FINISHED' || e.type === 'SUBAGENT_ERROR');
      expect(Math.max(...ends.map((e) => ev.indexOf(e)))).toBeLessThan(ev.indexOf(waited));
      expect(textOf(by(r.events, undefined))).toBe('Both regions reported.');
      // The client keeps the subagents' messages attributed to them.
      expect(r.newMessages).toEqual(expect.arrayContaining([expect.objectContaining({ role: 'assistant', content: 'north is clear', subagentRunId: n })]));
      // The native runs behind them: children of the AG-UI run's session.
      const kids = await t.call(KEYS.memberA1, 'GET', `/v1/runs/${n}`);
      expect(kids.body).toMatchObject({ status: 'completed', parent_run_id: expect.stringMatching(/^run_/) });
    });

    it('a run that ends while a subagent still works: its segment ends SUBAGENT_FINISHED suspended before RUN_FINISHED', async () => {
      const agent = agentFor(KEYS.memberA1, uniq('thread-detach'), 'agui_lead');
      agent.addMessage({
        id: 'u1',
        role: 'user',
        content: script([{ tool_calls: [{ name: 'create_subagent', arguments: { name: 'slow', instructions: script([{ sleep_ms: 4000, text: 'late' }]) } }] }, { text: 'Started it.' }]),
      });
      const r = await run(agent, { runId: uniq('detach') });
      const ev = r.events as any[];
      const start = ev.find((e) => e.type === 'SUBAGENT_STARTED');
      const end = ev.find((e) => e.type === 'SUBAGENT_FINISHED');
      expect(end).toMatchObject({ subagentRunId: start.subagentRunId, outcome: { type: 'suspended' } });
      expect(ev.indexOf(end)).toBeLessThan(ev.indexOf(r.finished));
      expect(r.finished.outcome).toEqual({ type: 'success' });
      // The native parent run ended: its subagent's run is cancelled with it (issue 48).
      expect((await waitForRun(t, KEYS.memberA1, start.subagentRunId, isTerminal, 30_000)).status).toBe('cancelled');
    });
  });

  async function orderInterrupt(key: string) {
    const threadId = uniq('thread-order');
    const agent = agentFor(key, threadId);
    agent.addMessage({ id: 'u1', role: 'user', content: 'Please help with order O-1001, it has not arrived' });
    const first = await run(agent, { runId: uniq('order') });
    expect(first.finished.type).toBe('RUN_FINISHED');
    expect(first.finished.outcome.type).toBe('interrupt');
    const [interrupt] = first.finished.outcome.interrupts;
    expect(interrupt).toMatchObject({ reason: 'tool_approval', id: expect.stringMatching(/^apr_/), toolCallId: expect.stringMatching(/^call_/) });
    expect(new Date(interrupt.expiresAt).getTime()).toBeGreaterThan(Date.now());
    const ev = first.events as any[];
    expect(ev.some((e) => e.type === 'TOOL_CALL_RESULT' && ev.find((s) => s.type === 'TOOL_CALL_START' && s.toolCallId === e.toolCallId)?.toolCallName === 'get_order')).toBe(true);
    expect(ev.find((e) => e.type === 'TOOL_CALL_START' && e.toolCallId === interrupt.toolCallId)?.toolCallName).toBe('create_ticket');
    expect(agent.pendingInterrupts.map((i) => i.id)).toEqual([interrupt.id]);
    return { agent, interrupt, threadId };
  }

  it('an approval: interrupt outcome, then resume approve in a second runAgent, then the ticket', async () => {
    const { agent, interrupt } = await orderInterrupt(KEYS.memberA1);
    const second = await run(agent, { runId: uniq('order-approve'), resume: [{ interruptId: interrupt.id, status: 'resolved', payload: { decision: 'approve' } }] });
    expect(second.finished.outcome).toEqual({ type: 'success' });
    const ticketResult = (second.events as any[]).find((e) => e.type === 'TOOL_CALL_RESULT' && e.toolCallId === interrupt.toolCallId);
    const ticketId = String(ticketResult.content).match(/T-[A-Z0-9]+/)![0];
    expect(textOf(second.events)).toContain(ticketId);
    expect(agent.pendingInterrupts).toEqual([]);
    // The native run: one run, approved and completed, the ticket created once.
    const runId = interrupt.metadata.run_id;
    const native = await waitForRun(t, KEYS.memberA1, runId, isTerminal);
    expect(native.status).toBe('completed');
    const events = await runEvents(t, KEYS.memberA1, runId);
    expect(events.filter((e) => e.type === 'tool.started' && e.data.tool_name === 'create_ticket')).toHaveLength(1);
    expect(events.some((e) => e.type === 'approval.accepted')).toBe(true);
  });

  it('a rejection likewise: no ticket, the model answers without it', async () => {
    const { agent, interrupt } = await orderInterrupt(KEYS.memberA1);
    const second = await run(agent, { runId: uniq('order-reject'), resume: [{ interruptId: interrupt.id, status: 'resolved', payload: { decision: 'reject', reason: 'not now' } }] });
    expect(second.finished.outcome).toEqual({ type: 'success' });
    expect(textOf(second.events)).not.toMatch(/T-[A-Z0-9]+/);
    const events = await runEvents(t, KEYS.memberA1, interrupt.metadata.run_id);
    expect(events.some((e) => e.type === 'tool.started' && e.data.tool_name === 'create_ticket' && e.data.attempt > 0)).toBe(false);
    expect(events.some((e) => e.type === 'approval.rejected' && e.data.reason === 'not now')).toBe(true);
    expect(events[events.length - 1]).toMatchObject({ type: 'run.finished', data: { status: 'completed' } });
  });

  it('a frontend tool from `tools`: success with pendingToolCallIds, answered by a tool message in the next request', async () => {
    const agent = agentFor(KEYS.memberA1, uniq('thread-frontend'));
    const tools = [{ name: 'confirm_address', description: 'Asks the user to confirm the address.', parameters: { type: 'object', properties: { address: { type: 'string' } } } }];
    agent.addMessage({
      id: 'u1',
      role: 'user',
      content: script([{ tool_calls: [{ id: 'call_confirm_1', name: 'confirm_address', arguments: { address: '1 Main St' } }] }, { text: 'Address confirmed, shipping now.' }]),
    });
    const first = await run(agent, { runId: uniq('fe'), tools });
    expect(first.finished.outcome).toEqual({ type: 'success', pendingToolCallIds: ['call_confirm_1'] });
    expect((first.events as any[]).find((e) => e.type === 'TOOL_CALL_START')).toMatchObject({ toolCallId: 'call_confirm_1', toolCallName: 'confirm_address' });
    expect((first.events as any[]).some((e) => e.type === 'TOOL_CALL_RESULT')).toBe(false);
    agent.addMessage({ id: 't1', role: 'tool', toolCallId: 'call_confirm_1', content: JSON.stringify({ confirmed: true }) });
    const second = await run(agent, { runId: uniq('fe-2'), tools });
    expect(second.finished.outcome).toEqual({ type: 'success' });
    expect(textOf(second.events)).toBe('Address confirmed, shipping now.');
    // Natively: one run, which waited for the client tool and took its output.
    const sid = (await t.call(KEYS.memberA1, 'GET', '/v1/sessions?limit=100')).body.data.find((s: any) => s.metadata.ag_ui_thread === agent.threadId).id;
    const runs = await runsOf(KEYS.memberA1, sid);
    expect(runs).toHaveLength(1);
    const events = await runEvents(t, KEYS.memberA1, runs[0].id);
    expect(events.find((e) => e.type === 'tool.completed' && e.data.tool_call_id === 'call_confirm_1')?.data.result).toEqual({ confirmed: true });
  });

  it("member projection: a private tool's arguments are redacted for members, not for admins", async () => {
    const body = script([{ tool_calls: [{ id: 'call_lookup_1', name: 'lookup_customer', arguments: { email: 'ada@example.com' } }] }, { text: 'ok' }]);
    const args = async (key: string) => {
      const agent = agentFor(key, uniq('thread-private'));
      agent.addMessage({ id: 'u1', role: 'user', content: body });
      const r = await run(agent, { runId: uniq('private') });
      expect(r.finished.outcome).toEqual({ type: 'success', pendingToolCallIds: ['call_lookup_1'] });
      return JSON.parse((r.events as any[]).find((e) => e.type === 'TOOL_CALL_ARGS').delta);
    };
    expect(await args(KEYS.memberA1)).toEqual({ redacted: true });
    expect(await args(KEYS.adminA)).toEqual({ email: 'ada@example.com' });
  });

  it('a cancelled run ends with the cancelled outcome, everything it opened closed', async () => {
    const sid = await createSession(t, KEYS.memberA1);
    const agent = agentFor(KEYS.memberA1, sid);
    agent.addMessage({ id: 'u1', role: 'user', content: script([{ tool_calls: [{ id: 'call_slow_1', name: 'slow_tool', arguments: { ms: 60000 } }] }, { text: 'never' }]) });
    let cancelled: Promise<unknown> | null = null;
    const r = await run(agent, { runId: uniq('cancel') }, (e) => {
      if (e.type === 'TOOL_CALL_END' && !cancelled) {
        cancelled = runsOf(KEYS.memberA1, sid).then(([native]) => t.call(KEYS.memberA1, 'POST', `/v1/runs/${native.id}/cancel`));
      }
    });
    expect(((await cancelled) as any).status).toBeLessThan(300);
    expect(r.finished).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'cancelled' } });
    const [native] = await runsOf(KEYS.memberA1, sid);
    expect(native.status).toBe('cancelled');
  });

  it("a request's user input has a persistent receipt: its id in X-Agent-Input-Id, readable at GET /v1/inputs/{id}", async () => {
    const sid = await createSession(t, KEYS.memberA1);
    const res = await fetch(`${t.url}/ag-ui/agents/support_agent`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEYS.memberA1}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ threadId: sid, runId: uniq('receipt'), messages: [{ id: 'u1', role: 'user', content: script([{ text: 'ok' }]) }], tools: [], context: [], state: {}, forwardedProps: {} }),
    });
    expect(res.status).toBe(200);
    const inputId = res.headers.get('x-agent-input-id');
    const runId = res.headers.get('x-agent-run-id');
    await res.text();
    expect(inputId).toMatch(/^inp_/);
    const receipt = await t.call(KEYS.memberA1, 'GET', `/v1/inputs/${inputId}`);
    expect(receipt.body).toMatchObject({ id: inputId, object: 'input', session_id: sid, disposition: 'started', run_id: runId });
  });

  it('the same runId twice gives one run; a dropped connection does not stop it, and the retry streams it from the start', async () => {
    const sid = await createSession(t, KEYS.memberA1);
    const runId = uniq('same');
    const content = script([{ text: 'one two three four five six', chunk_size: 4, delay_ms: 60 }]);
    // First attempt: the client drops the connection at the first text delta.
    const dropping = agentFor(KEYS.memberA1, sid);
    dropping.addMessage({ id: 'u1', role: 'user', content });
    const seen: string[] = [];
    await dropping
      .runAgent({ runId } as any, {
        onEvent: ({ event }) => {
          seen.push(event.type);
          if (event.type === 'TEXT_MESSAGE_CONTENT') dropping.abortRun();
        },
      })
      .catch(() => undefined);
    expect(seen).toContain('RUN_STARTED');
    const [native] = await runsOf(KEYS.memberA1, sid);
    const done = await waitForRun(t, KEYS.memberA1, native.id, isTerminal);
    expect(done.status).toBe('completed');
    // The retry (a new client, the same runId): the whole run again, the same text, no second run.
    for (let i = 0; i < 2; i++) {
      const again = agentFor(KEYS.memberA1, sid);
      again.addMessage({ id: 'u1', role: 'user', content });
      const r = await run(again, { runId });
      expect(r.finished.outcome).toEqual({ type: 'success' });
      expect(textOf(r.events)).toBe('one two three four five six');
    }
    expect(await runsOf(KEYS.memberA1, sid)).toHaveLength(1);
    const msgs = await t.call(KEYS.memberA1, 'GET', `/v1/sessions/${sid}/messages?limit=100`);
    expect(msgs.body.data.filter((m: any) => m.role === 'user')).toHaveLength(1);
  });

  it('a thread name maps to one session of the caller: the next request continues it, another caller gets its own', async () => {
    const threadId = uniq('thread-named');
    const a = agentFor(KEYS.memberA1, threadId);
    a.addMessage({ id: 'u1', role: 'user', content: script([{ text: 'first' }]) });
    await run(a, { runId: uniq('named-1') });
    a.addMessage({ id: 'u2', role: 'user', content: script([{ text: 'second' }]) });
    const r2 = await run(a, { runId: uniq('named-2') });
    expect(textOf(r2.events)).toBe('second');
    const mine = (await t.call(KEYS.memberA1, 'GET', '/v1/sessions?limit=100')).body.data.filter((s: any) => s.metadata.ag_ui_thread === threadId);
    expect(mine).toHaveLength(1);
    expect(await runsOf(KEYS.memberA1, mine[0].id)).toHaveLength(2);
    const b = agentFor(KEYS.memberA2, threadId);
    b.addMessage({ id: 'u1', role: 'user', content: script([{ text: 'theirs' }]) });
    await run(b, { runId: uniq('named-b') });
    const theirs = (await t.call(KEYS.memberA2, 'GET', '/v1/sessions?limit=100')).body.data.filter((s: any) => s.metadata.ag_ui_thread === threadId);
    expect(theirs).toHaveLength(1);
    expect(theirs[0].id).not.toBe(mine[0].id);
  });

  it("another tenant's session as threadId is refused exactly like a missing one", async () => {
    const foreign = await createSession(t, KEYS.memberA1);
    const missing = 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B';
    const attempt = async (threadId: string) => {
      const agent = agentFor(KEYS.memberB, threadId);
      agent.addMessage({ id: 'u1', role: 'user', content: 'hello' });
      const err: any = await agent.runAgent({ runId: uniq('foreign') } as any).then(
        () => null,
        (e) => e,
      );
      expect(err).not.toBeNull();
      return err;
    };
    const spy = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      const a = await attempt(foreign);
      const b = await attempt(missing);
      expect(a.status).toBe(404);
      expect(b.status).toBe(404);
      const strip = (p: any, id: string) => {
        const { request_id, ...rest } = p.error;
        expect(typeof request_id).toBe('string');
        return JSON.parse(JSON.stringify(rest).split(id).join('<id>'));
      };
      expect(strip(a.payload, foreign)).toEqual(strip(b.payload, missing));
      expect(a.payload.error.code).toBe('session_not_found');
    } finally {
      spy.mockRestore();
    }
    // Nothing happened to the foreign session.
    expect(await runsOf(KEYS.memberA1, foreign)).toHaveLength(0);
  });
});
