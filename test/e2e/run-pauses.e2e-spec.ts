import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { HttpAgent } from '@ag-ui/client';
import OpenAI from 'openai';
import { FakeClock } from '../../src/common/clock/clock';
import { contractOrderProblems, createSession, isTerminal, runEvents, script, startRun, userInput, waitForRun } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * Pauses (CONTRACT 17) on the native API: ask_user answered by the next input (any mode), timers
 * woken by the due sweeper, http tools that answer by callback, and quota waits. The app runs on
 * a FakeClock: time-driven wakes happen when the test moves the clock, never by sleeping. One
 * test at the end uses the real clock end to end.
 */

/** An http tool server: `/later` answers 202 {"callback": true}; `/hold` answers it only when released. */
async function startCallbackTool() {
  const seen: Array<{ path: string; token: string | undefined; body: any }> = [];
  const held = new Map<string, () => void>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null');
      const token = req.headers['callback-token'] as string | undefined;
      seen.push({ path: req.url ?? '/', token, body });
      const accept = () => {
        res.writeHead(202, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ callback: true }));
      };
      if (req.url === '/hold') held.set(body.tool_call_id, accept);
      else accept();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    seen,
    tokenOf: (toolCallId: string) => seen.find((s) => s.body?.tool_call_id === toolCallId)?.token,
    release: (toolCallId: string) => held.get(toolCallId)?.(),
    held: (toolCallId: string) => held.has(toolCallId),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

async function until<T>(what: string, fn: () => Promise<T | undefined | null | false> | T | undefined | null | false, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timeout waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 40));
  }
}

describe('run pauses (CONTRACT 17)', () => {
  let t: TestApp;
  let tool: Awaited<ReturnType<typeof startCallbackTool>>;
  const clock = new FakeClock();
  const admin = KEYS.adminA;

  beforeAll(async () => {
    tool = await startCallbackTool();
    t = await startTestApp({ INPUT_TTL_MS: '600000' }, { clock });
    const agent = await t.call(admin, 'POST', '/v1/agents', {
      id: 'pausing_agent',
      description: 'Asks, waits and calls back.',
      instructions: 'Pause when you must.',
      tools: [
        'ask_user',
        'wait',
        'wait_until',
        'get_time',
        { type: 'http', name: 'ship', description: 'Ships; answers later.', parameters: { type: 'object' }, url: `${tool.url}/later`, callback_timeout_ms: 60_000 },
        { type: 'http', name: 'ship_held', description: 'Ships; its 202 comes when released.', parameters: { type: 'object' }, url: `${tool.url}/hold`, idempotent: true },
      ],
    });
    expect(agent.status).toBe(201);
    const b = await t.call(KEYS.adminB, 'POST', '/v1/agents', { id: 'pausing_agent', description: 'B', instructions: 'x', tools: ['get_time'] });
    expect(b.status).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await tool?.close();
  });

  async function scripted(turns: unknown[], key: string = admin, body: Record<string, unknown> = {}) {
    const sid = await createSession(t, key, { agent_id: 'pausing_agent' });
    const r = await startRun(t, key, sid, { input: userInput(script(turns)), ...body });
    expect(r.status).toBe(202);
    return { sid, runId: r.body.run_id as string };
  }

  it('ask_user: waiting_for_input with run.input_requested and pause; the next input in any mode answers it and the SAME run continues', async () => {
    const { sid, runId } = await scripted([
      { tool_calls: [{ id: 'call_q1', name: 'ask_user', arguments: { question: 'Which order?' } }] },
      { tool_calls: [{ id: 'call_q2', name: 'ask_user', arguments: { question: 'Refund or replace?' } }] },
      { tool_calls: [{ id: 'call_q3', name: 'ask_user', arguments: { question: 'Anything else?' } }] },
      { text: 'All done.' },
    ]);
    const waiting = await waitForRun(t, admin, runId, (r) => r.status === 'waiting_for_input');
    expect(waiting.pause).toMatchObject({ reason: 'input', details: { question: 'Which order?', tool_call_id: 'call_q1' } });
    expect(Date.parse(waiting.pause.until) - Date.parse(waiting.pause.since)).toBe(600_000);
    const asked = (await runEvents(t, admin, runId)).filter((e) => e.type === 'run.input_requested' || e.type === 'run.waiting');
    expect(asked.map((e) => [e.type, e.data])).toEqual([
      ['run.input_requested', { question: 'Which order?', tool_call_id: 'call_q1', expires_at: waiting.pause.until }],
      ['run.waiting', { status: 'waiting_for_input', reason: 'input_required' }],
    ]);

    // The session's default concurrency (steer): answered.
    const a1 = await startRun(t, admin, sid, { input: userInput('O-1001') });
    expect(a1.status).toBe(202);
    expect(a1.body).toMatchObject({ run_id: runId, steered: true, answered: true });
    await waitForRun(t, admin, runId, (r) => r.status === 'waiting_for_input' && r.pause.details.tool_call_id === 'call_q2');
    // reject: still answered (no 409 session_busy).
    const a2 = await startRun(t, admin, sid, { input: userInput('replace'), concurrency: 'reject' });
    expect(a2.status).toBe(202);
    expect(a2.body).toMatchObject({ run_id: runId, answered: true });
    await waitForRun(t, admin, runId, (r) => r.status === 'waiting_for_input' && r.pause.details.tool_call_id === 'call_q3');
    // enqueue, in sync mode: answered, and the sync wait gives the finished run.
    const a3 = await startRun(t, admin, sid, { input: userInput('no'), concurrency: 'enqueue', mode: 'sync', wait_timeout_ms: 20_000 });
    expect(a3.status).toBe(200);
    expect(a3.body).toMatchObject({ id: runId, status: 'completed', output_text: 'All done.', step_count: 4 });
    expect(a3.body.pause).toBeUndefined();

    const events = await runEvents(t, admin, runId);
    expect(contractOrderProblems(events)).toEqual([]);
    const answers = events.filter((e) => e.type === 'tool.completed').map((e) => [e.data.tool_call_id, e.data.result.answer]);
    expect(answers).toEqual([
      ['call_q1', 'O-1001'],
      ['call_q2', 'replace'],
      ['call_q3', 'no'],
    ]);
    expect(events.filter((e) => e.type === 'run.resumed')).toHaveLength(3);
    // One run in the session: the answers never started runs of their own; they are its messages.
    const runs = await t.call(admin, 'GET', `/v1/sessions/${sid}/runs`);
    expect(runs.body.data.map((r: any) => r.id)).toEqual([runId]);
    const messages = await t.call(admin, 'GET', `/v1/sessions/${sid}/messages?limit=100`);
    const users = messages.body.data.filter((m: any) => m.role === 'user');
    expect(users.map((m: any) => m.id)).toContain(a1.body.user_message_id);
  });

  it('ask_user through the openai SDK: finalResult() gives the question (the session waits idle for input), a new input answers it and the same turn completes', async () => {
    const sessions = new OpenAI({ baseURL: `${t.url}/openai/v1`, apiKey: admin, maxRetries: 0 }).beta.agents.sessions;
    const s: any = await sessions.create({ agent_id: 'pausing_agent', environment: { type: 'none' } } as never);
    const asked = await sessions
      .stream(s.id, { input: script([{ tool_calls: [{ id: 'call_oa', name: 'ask_user', arguments: { question: 'Which order?' } }] }, { text: 'Order O-1001 it is.' }]) })
      .finalResult();
    expect(asked.output_text).toBe('Which order?');
    expect((await t.call(admin, 'GET', `/v1/runs/${asked.turn_id}`)).body).toMatchObject({ status: 'waiting_for_input', pause: { reason: 'input' } });
    expect(await sessions.retrieve(s.id)).toMatchObject({ status: 'idle', required_actions: [] });
    const answered = await sessions.stream(s.id, { input: 'O-1001' }).finalResult();
    expect(answered.turn_id).toBe(asked.turn_id);
    expect(answered.output_text).toBe('Order O-1001 it is.');
    const run = (await t.call(admin, 'GET', `/v1/runs/${asked.turn_id}`)).body;
    expect(run).toMatchObject({ status: 'completed', step_count: 2 });
    const out = (await runEvents(t, admin, run.id)).find((e) => e.type === 'tool.completed');
    expect(out.data.result).toMatchObject({ answer: 'O-1001' });
    expect((await t.call(admin, 'GET', `/v1/sessions/${s.id}/runs`)).body.data).toHaveLength(1);
  });

  it('ask_user through AG-UI (HttpAgent, verifier on): the stream ends with an interrupt (input_required), a resume entry answers it and the same run goes on', async () => {
    const agent = new HttpAgent({ url: `${t.url}/ag-ui/agents/pausing_agent`, headers: { Authorization: `Bearer ${admin}` }, threadId: `thread-ask-${Date.now()}` });
    agent.addMessage({ id: 'u1', role: 'user', content: script([{ tool_calls: [{ id: 'call_ag', name: 'ask_user', arguments: { question: 'Which size?' } }] }, { text: 'Size M it is.' }]) });
    const collect = async (params: Record<string, unknown>) => {
      const events: any[] = [];
      await agent.runAgent(params as never, { onEvent: ({ event }) => void events.push(event) });
      return events;
    };
    const first = await collect({ runId: `ag-ask-${Date.now()}` });
    const finished = first[first.length - 1];
    expect(finished.type).toBe('RUN_FINISHED');
    expect(finished.outcome.type).toBe('interrupt');
    const [interrupt] = finished.outcome.interrupts;
    expect(interrupt).toMatchObject({ id: 'call_ag', reason: 'input_required', message: 'Which size?', toolCallId: 'call_ag', metadata: { tool_name: 'ask_user' } });
    expect(agent.pendingInterrupts.map((i: any) => i.id)).toEqual(['call_ag']);
    const runId = interrupt.metadata.run_id;
    expect((await t.call(admin, 'GET', `/v1/runs/${runId}`)).body.status).toBe('waiting_for_input');

    const second = await collect({ runId: `ag-ask-2-${Date.now()}`, resume: [{ interruptId: 'call_ag', status: 'resolved', payload: { answer: 'M' } }] });
    expect(second[second.length - 1]).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
    const text = second.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT').map((e) => e.delta).join('');
    expect(text).toBe('Size M it is.');
    expect(agent.pendingInterrupts).toEqual([]);
    const native = await waitForRun(t, admin, runId, isTerminal);
    expect(native).toMatchObject({ status: 'completed', step_count: 2 });
    expect((await runEvents(t, admin, runId)).find((e) => e.type === 'tool.completed').data.result).toMatchObject({ answer: 'M' });
  });

  it('ask_user: a cancelled run is not answered (the input starts a run of its own); an unanswered one expires after INPUT_TTL_MS', async () => {
    const { sid, runId } = await scripted([{ tool_calls: [{ name: 'ask_user', arguments: { question: 'q?' } }] }, { text: 'never' }]);
    await waitForRun(t, admin, runId, (r) => r.status === 'waiting_for_input');
    expect((await t.call(admin, 'POST', `/v1/runs/${runId}/cancel`)).status).toBe(202);
    const next = await startRun(t, admin, sid, { input: userInput('hello again') });
    expect(next.status).toBe(202);
    expect(next.body.run_id).not.toBe(runId);
    expect(next.body.answered).toBeUndefined();
    await waitForRun(t, admin, next.body.run_id, isTerminal);

    const other = await scripted([{ tool_calls: [{ name: 'ask_user', arguments: { question: 'still there?' } }] }, { text: 'never' }]);
    const w = await waitForRun(t, admin, other.runId, (r) => r.status === 'waiting_for_input');
    clock.set(Date.parse(w.pause.until));
    const expired = await waitForRun(t, admin, other.runId, isTerminal);
    expect(expired).toMatchObject({ status: 'expired', error: { code: 'input_expired' } });
    expect(contractOrderProblems(await runEvents(t, admin, other.runId))).toEqual([]);
  });

  it('timers: wait {seconds} sleeps in waiting_for_timer until the clock reaches it, then the same run continues; wait_until past the deadline ends it', async () => {
    const { runId } = await scripted([{ tool_calls: [{ id: 'call_w', name: 'wait', arguments: { seconds: 90 } }] }, { text: 'woke up' }]);
    const w = await waitForRun(t, admin, runId, (r) => r.status === 'waiting_for_timer');
    expect(w.pause).toMatchObject({ reason: 'timer', details: { tool_call_id: 'call_w' } });
    expect(Date.parse(w.pause.until) - Date.parse(w.pause.since)).toBe(90_000);
    // Not yet: a second before.
    clock.set(Date.parse(w.pause.until) - 1000);
    await new Promise((r) => setTimeout(r, 600));
    expect((await t.call(admin, 'GET', `/v1/runs/${runId}`)).body.status).toBe('waiting_for_timer');
    clock.set(Date.parse(w.pause.until));
    const done = await waitForRun(t, admin, runId, isTerminal);
    expect(done).toMatchObject({ status: 'completed', step_count: 2 });
    const events = await runEvents(t, admin, runId);
    expect(contractOrderProblems(events)).toEqual([]);
    expect(events.find((e) => e.type === 'tool.completed').data.result).toEqual({ waited_until: w.pause.until, waited_ms: 90_000 });
    expect(events.filter((e) => e.type === 'run.resumed')).toHaveLength(1);

    const far = new Date(clock.now() + 24 * 3_600_000).toISOString();
    const late = await scripted([{ tool_calls: [{ name: 'wait_until', arguments: { time: far } }] }, { text: 'never' }], admin, { limits: { timeout_ms: 60_000 } });
    const lw = await waitForRun(t, admin, late.runId, (r) => r.status === 'waiting_for_timer');
    expect(lw.pause.details.requested_until).toBe(far);
    expect(Date.parse(lw.pause.until)).toBe(Date.parse(lw.started_at) + 60_000);
    clock.set(Date.parse(lw.pause.until));
    expect(await waitForRun(t, admin, late.runId, isTerminal)).toMatchObject({ status: 'terminated', termination_reason: 'deadline' });
  });

  it('callbacks: an http tool answering 202 {"callback": true} -> waiting_for_callback; the Callback-Token answers it once; late or repeated is 409 callback_not_expected', async () => {
    const { runId } = await scripted([{ tool_calls: [{ id: 'call_s', name: 'ship', arguments: { sku: 'KB-42' } }] }, { text: 'shipped' }]);
    const w = await waitForRun(t, admin, runId, (r) => r.status === 'waiting_for_callback');
    expect(w.pause).toMatchObject({ reason: 'callback', details: { tool_call_id: 'call_s' } });
    expect(Date.parse(w.pause.until) - Date.parse(w.pause.since)).toBe(60_000);
    const token = tool.tokenOf('call_s')!;
    expect(token).toMatch(/^cbt_[A-Za-z0-9_-]{43}$/);
    const path = `/v1/runs/${runId}/callbacks/call_s`;
    // No token and no key: 401; a member key: 403; a wrong token: 401; another tenant's admin: 404.
    expect((await t.call(null, 'POST', path, { output: 1 })).status).toBe(401);
    expect((await t.call(KEYS.memberA1, 'POST', path, { output: 1 })).status).toBe(403);
    const wrong = await t.call(null, 'POST', path, { output: 1 }, { 'callback-token': `${token.slice(0, -1)}x` });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.code).toBe('unauthorized');
    expect((await t.call(KEYS.adminB, 'POST', path, { output: 1 })).status).toBe(404);
    expect((await t.call(null, 'POST', path, {}, { 'callback-token': token })).status).toBe(400);

    const ok = await t.call(null, 'POST', path, { output: { shipment: 'SHP-7' } }, { 'callback-token': token });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ object: 'tool_callback', run_id: runId, tool_call_id: 'call_s', run_status: 'running' });
    const again = await t.call(null, 'POST', path, { output: { shipment: 'SHP-8' } }, { 'callback-token': token });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('callback_not_expected');
    const done = await waitForRun(t, admin, runId, isTerminal);
    expect(done).toMatchObject({ status: 'completed', step_count: 2 });
    const events = await runEvents(t, admin, runId);
    expect(contractOrderProblems(events)).toEqual([]);
    expect(events.filter((e) => e.type === 'tool.completed').map((e) => e.data.result)).toEqual([{ shipment: 'SHP-7' }]);
    expect(JSON.stringify(events)).not.toContain(token);
    expect(JSON.stringify(done)).not.toContain(token);
  });

  it('callbacks: an admin key answers without a token; no callback within callback_timeout_ms fails the call (tool_timeout) and the run goes on', async () => {
    const a = await scripted([{ tool_calls: [{ id: 'call_a', name: 'ship', arguments: {} }] }, { text: 'ok' }]);
    await waitForRun(t, admin, a.runId, (r) => r.status === 'waiting_for_callback');
    const byAdmin = await t.call(admin, 'POST', `/v1/runs/${a.runId}/callbacks/call_a`, { error: { code: 'out_of_stock', message: 'no stock' } });
    expect(byAdmin.status).toBe(200);
    await waitForRun(t, admin, a.runId, isTerminal);
    const failed = (await runEvents(t, admin, a.runId)).find((e) => e.type === 'tool.failed');
    expect(failed.data.error).toMatchObject({ code: 'out_of_stock', message: 'no stock' });

    const b = await scripted([{ tool_calls: [{ id: 'call_t', name: 'ship', arguments: {} }] }, { text: 'gave up' }]);
    const w = await waitForRun(t, admin, b.runId, (r) => r.status === 'waiting_for_callback');
    clock.set(Date.parse(w.pause.until));
    expect(await waitForRun(t, admin, b.runId, isTerminal)).toMatchObject({ status: 'completed' });
    const timedOut = (await runEvents(t, admin, b.runId)).find((e) => e.type === 'tool.failed');
    expect(timedOut.data.error.code).toBe('tool_timeout');
    const late = await t.call(null, 'POST', `/v1/runs/${b.runId}/callbacks/call_t`, { output: 1 }, { 'callback-token': tool.tokenOf('call_t')! });
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('callback_not_expected');
  });

  it('callbacks: an answer over the 1 MiB cap is 413 to the tool and ends the call too_large (as over http and MCP); without its token it changes nothing', async () => {
    const { runId } = await scripted([{ tool_calls: [{ id: 'call_big', name: 'ship', arguments: {} }] }, { text: 'ok' }]);
    await waitForRun(t, admin, runId, (r) => r.status === 'waiting_for_callback');
    const path = `/v1/runs/${runId}/callbacks/call_big`;
    const big = { output: { blob: 'x'.repeat(1024 * 1024 + 10) } };
    // No token: refused as too large, the call still waits.
    const anonymous = await t.call(null, 'POST', path, big);
    expect(anonymous.status).toBe(413);
    expect((await t.call(admin, 'GET', `/v1/runs/${runId}`)).body.status).toBe('waiting_for_callback');
    const res = await t.call(null, 'POST', path, big, { 'callback-token': tool.tokenOf('call_big')! });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('payload_too_large');
    expect(await waitForRun(t, admin, runId, isTerminal)).toMatchObject({ status: 'completed' });
    const failed = (await runEvents(t, admin, runId)).find((e) => e.type === 'tool.failed');
    expect(failed.data.error).toMatchObject({ code: 'too_large', message: expect.stringContaining('bytes') });
    expect(JSON.stringify(failed)).not.toContain('xxxxxxxx');
  });

  it("callbacks: a callback that comes before the tool's 202 is kept; the run continues with it", async () => {
    const { runId } = await scripted([{ tool_calls: [{ id: 'call_h', name: 'ship_held', arguments: {} }] }, { text: 'fast' }]);
    await until('the held tool request', () => tool.held('call_h'));
    const early = await t.call(null, 'POST', `/v1/runs/${runId}/callbacks/call_h`, { output: { early: true } }, { 'callback-token': tool.tokenOf('call_h')! });
    expect(early.status).toBe(200);
    tool.release('call_h');
    expect(await waitForRun(t, admin, runId, isTerminal)).toMatchObject({ status: 'completed', step_count: 2 });
    const events = await runEvents(t, admin, runId);
    expect(contractOrderProblems(events)).toEqual([]);
    expect(events.filter((e) => e.type === 'tool.completed').map((e) => e.data.result)).toEqual([{ early: true }]);
    expect(events.some((e) => e.type === 'run.waiting')).toBe(false);
  });

  it('quota: a run reaching the spend limit mid-run waits in waiting_for_quota and continues when the limit is raised', async () => {
    const key = KEYS.adminB;
    expect((await t.call(key, 'PUT', '/v1/admin/spend_limit', { amount: '0.000001', window: 'day' })).status).toBe(200);
    const { runId } = await scripted([{ tool_calls: [{ name: 'get_time', arguments: {} }] }, { text: 'after the limit' }], key);
    const w = await waitForRun(t, key, runId, (r) => r.status === 'waiting_for_quota');
    expect(w).toMatchObject({ step_count: 1, pause: { reason: 'quota', details: { limit: { amount: '0.000001', window: 'day' } } } });
    // Still over the limit: a recheck changes nothing.
    clock.advance(6_000);
    await new Promise((r) => setTimeout(r, 600));
    expect((await t.call(key, 'GET', `/v1/runs/${runId}`)).body.status).toBe('waiting_for_quota');
    expect((await t.call(key, 'PUT', '/v1/admin/spend_limit', { amount: '100', window: 'day' })).status).toBe(200);
    clock.advance(6_000);
    const done = await waitForRun(t, key, runId, isTerminal);
    expect(done).toMatchObject({ status: 'completed', step_count: 2 });
    const events = await runEvents(t, key, runId);
    expect(contractOrderProblems(events)).toEqual([]);
    expect(events.filter((e) => e.type === 'run.waiting').map((e) => e.data)).toEqual([{ status: 'waiting_for_quota', reason: 'quota' }]);
    expect((await t.call(key, 'DELETE', '/v1/admin/spend_limit')).status).toBe(204);
  });

  it('a cancel of a waiting run (timer, callback) wins over a later wake or callback', async () => {
    const { runId } = await scripted([{ tool_calls: [{ id: 'call_c', name: 'ship', arguments: {} }] }, { text: 'never' }]);
    await waitForRun(t, admin, runId, (r) => r.status === 'waiting_for_callback');
    const [cancel, cb] = await Promise.all([
      t.call(admin, 'POST', `/v1/runs/${runId}/cancel`),
      t.call(null, 'POST', `/v1/runs/${runId}/callbacks/call_c`, { output: 1 }, { 'callback-token': tool.tokenOf('call_c')! }),
    ]);
    expect(cancel.status).toBe(202);
    const run = await waitForRun(t, admin, runId, isTerminal);
    expect(run.status).toBe('cancelled');
    const events = await runEvents(t, admin, runId);
    expect(contractOrderProblems(events)).toEqual([]);
    // Exactly one won: the callback (its result recorded, then the cancel) or the cancel (the callback 409).
    if (cb.status === 200) expect(events.filter((e) => e.type === 'tool.completed')).toHaveLength(1);
    else {
      expect(cb.body.error.code).toBe('callback_not_expected');
      expect(events.filter((e) => e.type === 'tool.completed')).toHaveLength(0);
    }
  });
});

describe('run pauses on the real clock', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  it('wait {seconds: 1} rings by itself about a second later', async () => {
    const sid = await createSession(t, KEYS.adminA, { agent_id: 'assistant' });
    // `wait` is a built-in: a run of an agent that does not list it still knows it by name.
    const r = await startRun(t, KEYS.adminA, sid, { input: userInput(script([{ tool_calls: [{ name: 'wait', arguments: { seconds: 1 } }] }, { text: 'done' }])) });
    const w = await waitForRun(t, KEYS.adminA, r.body.run_id, (x) => x.status === 'waiting_for_timer' || isTerminal(x));
    expect(w.status).toBe('waiting_for_timer');
    const done = await waitForRun(t, KEYS.adminA, r.body.run_id, isTerminal);
    expect(done.status).toBe('completed');
    expect(Date.parse(done.finished_at) - Date.parse(w.pause.since)).toBeGreaterThanOrEqual(1000);
  });
});
