import { KEYS, startTestApp, TestApp } from '../helpers/test-app';
import { contractOrderProblems, createSession, isTerminal, runEvents, script, startRun, userInput, waitForRun } from '../helpers/runs';

describe('runs and the agent loop', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ SSE_KEEPALIVE_MS: '1000' });
  });
  afterAll(async () => {
    await t.close();
  });
  const key = KEYS.memberA1;

  it('streams a tool-calling run in contract order and keeps the causal chain in messages', async () => {
    const sid = await createSession(t, key, { agent_id: 'assistant' });
    const text = script([{ text: 'Let me check. ', tool_calls: [{ name: 'calculator', arguments: { expression: '6*7' } }] }, { text: 'The answer is 42.', chunk_size: 2 }]);
    const r = await startRun(t, key, sid, { input: userInput(text) });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ session_id: sid, status: 'queued', stream: { protocol: 'sse', url: `/v1/runs/${r.body.run_id}/events`, cursor: null } });
    expect(r.headers.get('content-location')).toBe(`/v1/runs/${r.body.run_id}`);
    const run = await waitForRun(t, key, r.body.run_id, isTerminal);
    expect(run).toMatchObject({ status: 'completed', step_count: 2, termination_reason: null, error: null });
    expect(run.usage).toMatchObject({ tool_calls: 1, model_calls: 2 });
    expect(run.usage.input_tokens).toBeGreaterThan(0);
    const events = await runEvents(t, key, run.id);
    expect(contractOrderProblems(events)).toEqual([]);
    expect(run.last_sequence).toBe(events.length);
    const completed = events.find((e) => e.type === 'tool.completed');
    expect(completed.data).toMatchObject({ tool_name: 'calculator', result: expect.anything() });
    const finished = events[events.length - 1];
    expect(finished.data).toMatchObject({ status: 'completed', final_message_id: run.final_message_id });

    const msgs = await t.call(key, 'GET', `/v1/sessions/${sid}/messages?limit=100`);
    expect(msgs.body.data.map((m: any) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const seqs = msgs.body.data.map((m: any) => m.sequence);
    expect(seqs).toEqual([...seqs].sort((a: number, b: number) => a - b));
    expect(msgs.body.data[1].content).toEqual([
      { type: 'text', text: 'Let me check. ' },
      expect.objectContaining({ type: 'tool_call', tool_name: 'calculator', arguments: { expression: '6*7' } }),
    ]);
    expect(msgs.body.data[2].content[0]).toMatchObject({ type: 'tool_result', ok: true, tool_name: 'calculator' });
    expect(msgs.body.data[3]).toMatchObject({ id: run.final_message_id, status: 'completed', content: [{ type: 'text', text: 'The answer is 42.' }] });
    const one = await t.call(key, 'GET', `/v1/sessions/${sid}/messages/${run.final_message_id}`);
    expect(one.body.id).toBe(run.final_message_id);
    // The session revision moved once per appended message (create = 1, four messages).
    const session = await t.call(key, 'GET', `/v1/sessions/${sid}`);
    expect(session.body.revision).toBe(5);
    expect(session.body.active_run_id).toBeNull();
  });

  it('sync mode waits for the outcome and returns the output text', async () => {
    const sid = await createSession(t, key);
    const r = await startRun(t, key, sid, { input: userInput(script([{ text: 'hello sync' }])), mode: 'sync', wait_timeout_ms: 15000 });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ object: 'run', status: 'completed', output_text: 'hello sync' });
    expect(r.headers.get('location')).toBe(`/v1/runs/${r.body.id}`);
  });

  it('sync mode answers 202 with the run when it is still running at the timeout', async () => {
    const sid = await createSession(t, key);
    const r = await startRun(t, key, sid, { input: userInput(script([{ sleep_ms: 3000, text: 'late' }])), mode: 'sync', wait_timeout_ms: 200 });
    expect(r.status).toBe(202);
    expect(r.body.object).toBe('run');
    expect(['queued', 'running']).toContain(r.body.status);
    await waitForRun(t, key, r.body.id, isTerminal);
  });

  it('replays a run creation on retry instead of starting a second run', async () => {
    const sid = await createSession(t, key);
    const body = { input: userInput(script([{ text: 'once' }])) };
    const a = await startRun(t, key, sid, body, 'same-key');
    const b = await startRun(t, key, sid, body, 'same-key');
    expect(b.status).toBe(202);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    // The same answer, its receipt as it is now (CONTRACT 7: a replay answers the current receipt).
    const { receipt: ra, ...restA } = a.body;
    const { receipt: rb, ...restB } = b.body;
    expect(restB).toEqual(restA);
    expect(rb).toMatchObject({ id: ra.id, disposition: 'started', run_id: a.body.run_id, message_id: a.body.user_message_id });
    expect(rb).toEqual((await t.call(key, 'GET', `/v1/inputs/${ra.id}`)).body);
    const list = await t.call(key, 'GET', `/v1/sessions/${sid}/runs`);
    expect(list.body.data).toHaveLength(1);
    const missing = await t.call(key, 'POST', `/v1/sessions/${sid}/runs`, body);
    expect(missing.status).toBe(400);
    expect(missing.body.error.code).toBe('idempotency_key_required');
  });

  it('rejects a second active run (session_busy) and queues it FIFO with enqueue', async () => {
    // `reject` explicitly: sessions steer by default (CONTRACT 7, seed 002).
    const sid = await createSession(t, key, { default_concurrency: 'reject' });
    const first = await startRun(t, key, sid, { input: userInput(script([{ sleep_ms: 3000, text: 'first' }])) });
    const busy = await startRun(t, key, sid, { input: userInput('second') });
    expect(busy.status).toBe(409);
    expect(busy.body.error).toMatchObject({ code: 'session_busy', retryable: true, details: { active_run_id: first.body.run_id } });
    expect(busy.headers.get('retry-after')).toBe('1');
    const second = await startRun(t, key, sid, { input: userInput(script([{ text: 'second' }])), concurrency: 'enqueue' });
    const third = await startRun(t, key, sid, { input: userInput(script([{ text: 'third' }])), concurrency: 'enqueue' });
    expect(second.status).toBe(202);
    const s = await t.call(key, 'GET', `/v1/sessions/${sid}`);
    expect(s.body.active_run_id).toBe(first.body.run_id);
    const r3 = await waitForRun(t, key, third.body.run_id, isTerminal);
    const r1 = await waitForRun(t, key, first.body.run_id, isTerminal);
    const r2 = await waitForRun(t, key, second.body.run_id, isTerminal);
    expect([r1.status, r2.status, r3.status]).toEqual(['completed', 'completed', 'completed']);
    expect(new Date(r2.started_at).getTime()).toBeGreaterThanOrEqual(new Date(r1.finished_at).getTime());
    expect(new Date(r3.started_at).getTime()).toBeGreaterThanOrEqual(new Date(r2.finished_at).getTime());
    // The last one to end left the session without an active run.
    expect((await t.call(key, 'GET', `/v1/sessions/${sid}`)).body.active_run_id).toBeNull();
  });

  it('gives a gap-free session stream across two runs', async () => {
    const sid = await createSession(t, key);
    const a = await startRun(t, key, sid, { input: userInput(script([{ text: 'one' }])) });
    await waitForRun(t, key, a.body.run_id, isTerminal);
    const b = await startRun(t, key, sid, { input: userInput(script([{ text: 'two' }])) });
    await waitForRun(t, key, b.body.run_id, isTerminal);
    const page = await t.call(key, 'GET', `/v1/sessions/${sid}/events?limit=1000`);
    expect(page.status).toBe(200);
    const seqs = page.body.data.map((e: any) => e.session_sequence);
    expect(seqs).toEqual(seqs.map((_: number, i: number) => i + 1));
    expect(new Set(page.body.data.map((e: any) => e.run_id))).toEqual(new Set([a.body.run_id, b.body.run_id]));
    // The list reads every run's last sequence in one go; each equals that run's event count.
    const list = await t.call(key, 'GET', `/v1/sessions/${sid}/runs`);
    for (const run of list.body.data) {
      expect(run.last_sequence).toBe(page.body.data.filter((e: any) => e.run_id === run.id).length);
    }
  });

  it('cancels a queued run at once and a running model call via cancelling', async () => {
    const sid = await createSession(t, key);
    const running = await startRun(t, key, sid, { input: userInput(script([{ sleep_ms: 20000, text: 'never' }])) });
    const queued = await startRun(t, key, sid, { input: userInput('queued'), concurrency: 'enqueue' });
    const q = await t.call(key, 'POST', `/v1/runs/${queued.body.run_id}/cancel`);
    expect(q.status).toBe(202);
    expect(q.body.status).toBe('cancelled');
    await waitForRun(t, key, running.body.run_id, (r) => r.status === 'running' && r.step_count === 1);
    const c = await t.call(key, 'POST', `/v1/runs/${running.body.run_id}/cancel`);
    expect(c.status).toBe(202);
    expect(['cancelling', 'cancelled']).toContain(c.body.status);
    const done = await waitForRun(t, key, running.body.run_id, isTerminal, 5000);
    expect(done.status).toBe('cancelled');
    expect(done.usage.model_calls).toBe(1); // the interrupted call was made and is counted
    expect(done.step_count).toBe(1);
    const history = await t.call(key, 'GET', `/v1/sessions/${sid}/messages?limit=100`);
    const assistant = history.body.data.filter((m: any) => m.role === 'assistant' && m.run_id === running.body.run_id);
    expect(assistant.map((m: any) => m.status)).toEqual(['cancelled']);
    const again = await t.call(key, 'POST', `/v1/runs/${running.body.run_id}/cancel`);
    expect(again.status).toBe(200);
    expect(again.body.status).toBe('cancelled');
    const events = await runEvents(t, key, running.body.run_id);
    expect(contractOrderProblems(events)).toEqual([]);
    expect(events.map((e) => e.type)).toContain('run.cancel_requested');
    const finishedRun = await startRun(t, key, sid, { input: userInput(script([{ text: 'x' }])) });
    await waitForRun(t, key, finishedRun.body.run_id, isTerminal);
    const late = await t.call(key, 'POST', `/v1/runs/${finishedRun.body.run_id}/cancel`);
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('run_finished');
  });

  it('cancels during a slow tool once the tool stopped, recording its outcome', async () => {
    const sid = await createSession(t, key);
    const r = await startRun(t, key, sid, { input: userInput(script([{ tool_calls: [{ name: 'slow_tool', arguments: { ms: 20000 } }] }, { text: 'after' }])) });
    const runId = r.body.run_id;
    const until = Date.now() + 10000;
    while (Date.now() < until) {
      const ev = await runEvents(t, key, runId);
      if (ev.some((e) => e.type === 'tool.started')) break;
      await new Promise((res) => setTimeout(res, 50));
    }
    await t.call(key, 'POST', `/v1/runs/${runId}/cancel`);
    const done = await waitForRun(t, key, runId, isTerminal, 5000);
    expect(done.status).toBe('cancelled');
    const events = await runEvents(t, key, runId);
    expect(contractOrderProblems(events)).toEqual([]);
    const outcome = events.find((e) => e.type === 'tool.failed' || e.type === 'tool.completed');
    expect(outcome).toBeDefined();
  });

  it.each([
    ['max_steps', { max_steps: 2 }, [{ tool_calls: [{ name: 'get_time', arguments: {} }] }, { tool_calls: [{ name: 'get_weather', arguments: { location: 'Oslo' } }] }, { text: 'x' }]],
    ['tool_budget', { max_tool_calls: 1 }, [{ tool_calls: [{ name: 'get_time', arguments: {} }, { name: 'get_weather', arguments: { location: 'Oslo' } }] }, { text: 'x' }]],
    ['token_budget', { max_total_tokens: 5 }, [{ tool_calls: [{ name: 'get_time', arguments: {} }] }, { text: 'x' }]],
    ['token_budget', { max_total_tokens: 10 }, [{ text: 'a single answer that is longer than the budget allows' }]],
    ['deadline', { timeout_ms: 1000 }, [{ sleep_ms: 5000, text: 'slow' }]],
    ['loop_detected', {}, Array.from({ length: 4 }, () => ({ tool_calls: [{ name: 'calculator', arguments: { expression: '1+1' } }] }))],
  ])('terminates at %s and never reports completed', async (reason, limits, turns) => {
    const sid = await createSession(t, key, { agent_id: 'assistant' });
    const r = await startRun(t, key, sid, { input: userInput(script(turns)), limits });
    const done = await waitForRun(t, key, r.body.run_id, isTerminal);
    expect(done).toMatchObject({ status: 'terminated', termination_reason: reason });
    const events = await runEvents(t, key, r.body.run_id);
    expect(contractOrderProblems(events)).toEqual([]);
    expect(events[events.length - 1].data).toMatchObject({ status: 'terminated', termination_reason: reason });
  });

  it('rejects U+0000 in input and cleans it from model output', async () => {
    const sid = await createSession(t, key);
    const bad = await startRun(t, key, sid, { input: userInput('a\u0000b') });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.errors[0].field).toBe('input.content[0].text');
    const title = await t.call(key, 'POST', '/v1/sessions', { title: 'x\u0000' });
    expect(title.status).toBe(400);
    const r = await startRun(t, key, sid, { input: userInput(script([{ text: 'a\u0000b' }])) });
    const done = await waitForRun(t, key, r.body.run_id, isTerminal);
    expect(done.status).toBe('completed');
    const final = await t.call(key, 'GET', `/v1/sessions/${sid}/messages/${done.final_message_id}`);
    expect(final.body.content[0].text).toBe('a\uFFFDb');
  });

  it('answers 400 (not 500) for a run without input', async () => {
    const sid = await createSession(t, key);
    const r = await startRun(t, key, sid, {});
    expect(r.status).toBe(400);
    expect(r.body.error.details.errors).toEqual([{ field: 'input', message: 'input is required' }]);
  });

  it('names each invalid nested field once, by its full path', async () => {
    const sid = await createSession(t, key);
    const r = await startRun(t, key, sid, { input: { role: 'user', content: [{ type: 'text', text: 5 }] }, limits: { max_steps: 'x' } });
    expect(r.status).toBe(400);
    expect(r.body.error.details.errors).toEqual([
      { field: 'input.content[0].text', message: 'input.content[0].text must be a string' },
      { field: 'limits.max_steps', message: 'limits.max_steps must be an integer number' },
    ]);
    expect(r.body.error.message).toBe('input.content[0].text must be a string; limits.max_steps must be an integer number');
  });

  it('a session keeps the agent version it pinned; runs freeze the model they were accepted with', async () => {
    const sid = await createSession(t, key);
    const s = await t.call(key, 'GET', `/v1/sessions/${sid}`);
    expect(s.body.agent).toEqual({ id: 'support_agent', version: '2', model: 'scripted' });
    const r = await startRun(t, key, sid, { input: userInput('hello') });
    const run = await waitForRun(t, key, r.body.run_id, isTerminal);
    expect(run.agent).toEqual({ id: 'support_agent', version: '2' });
    expect(run.model).toBe('scripted');
    const unknown = await startRun(t, key, sid, { input: userInput('x'), model: 'gpt-nope' });
    expect(unknown.status).toBe(400);
  });

  it('fails the run with the model error code', async () => {
    const sid = await createSession(t, key);
    const r = await startRun(t, key, sid, { input: userInput(script([{ error: { code: 'model_timeout' } }])) });
    const done = await waitForRun(t, key, r.body.run_id, isTerminal);
    expect(done).toMatchObject({ status: 'failed', error: { code: 'model_timeout' } });
  });

  it('makes unknown tools and bad arguments data for the model, not crashes', async () => {
    const sid = await createSession(t, key, { agent_id: 'assistant' });
    const r = await startRun(t, key, sid, {
      input: userInput(script([{ tool_calls: [{ name: 'no_such_tool', arguments: {} }, { name: 'calculator', arguments: { nope: 1 } }] }, { text: 'ok' }])),
    });
    const done = await waitForRun(t, key, r.body.run_id, isTerminal);
    expect(done.status).toBe('completed');
    const failed = (await runEvents(t, key, r.body.run_id)).filter((e) => e.type === 'tool.failed').map((e) => e.data.error.code);
    expect(failed.sort()).toEqual(['invalid_tool_arguments', 'tool_not_found']);
  });

  it('retries a flaky tool and passes the same side-effect key', async () => {
    const sid = await createSession(t, key);
    const r = await startRun(t, key, sid, { input: userInput(script([{ tool_calls: [{ name: 'flaky_tool', arguments: { fail_times: 2 } }] }, { text: 'ok' }])) });
    await waitForRun(t, key, r.body.run_id, isTerminal);
    const events = await runEvents(t, key, r.body.run_id);
    expect(events.filter((e) => e.type === 'tool.started').map((e) => e.data.attempt)).toEqual([1, 2, 3]);
    expect(events.filter((e) => e.type === 'tool.completed')).toHaveLength(1);
  });

  it('answers 404 for runs of other owners and tenants, exactly like a missing id', async () => {
    const sid = await createSession(t, key);
    const r = await startRun(t, key, sid, { input: userInput('hello') });
    for (const other of [KEYS.memberA2, KEYS.adminB, KEYS.memberB]) {
      const g = await t.call(other, 'GET', `/v1/runs/${r.body.run_id}`);
      expect(g.status).toBe(404);
      expect(g.body.error.code).toBe('run_not_found');
      const c = await t.call(other, 'POST', `/v1/runs/${r.body.run_id}/cancel`);
      expect(c.status).toBe(404);
      const s = await startRun(t, other, sid, { input: userInput('x') });
      expect(s.body.error.code).toBe('session_not_found');
    }
    const admin = await t.call(KEYS.adminA, 'GET', `/v1/runs/${r.body.run_id}`);
    expect(admin.status).toBe(200);
  });

  it('refuses runs on archived sessions and a stale expected_revision', async () => {
    const sid = await createSession(t, key);
    const stale = await startRun(t, key, sid, { input: userInput('x'), expected_revision: 7 });
    expect(stale.status).toBe(409);
    expect(stale.body.error).toMatchObject({ code: 'session_conflict', details: { current_revision: 1 } });
    await t.call(key, 'POST', `/v1/sessions/${sid}/archive`, {});
    const archived = await startRun(t, key, sid, { input: userInput('x') });
    expect(archived.status).toBe(409);
    expect(archived.body.error.code).toBe('session_archived');
    const bad = await startRun(t, key, sid, { input: { role: 'assistant', content: [] }, status: 'running' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.errors.map((e: any) => e.field)).toEqual(expect.arrayContaining(['status', 'input.role']));
  });
});

describe('runs with attachments', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  async function upload(key: string, name: string, body: string, idem: string) {
    const form = new FormData();
    form.append('file', new Blob([body], { type: 'text/plain' }), name);
    const res = await fetch(`${t.url}/v1/attachments`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'idempotency-key': idem }, body: form });
    expect(res.status).toBe(202);
    return ((await res.json()) as { id: string }).id;
  }

  async function ready(key: string, id: string) {
    for (let i = 0; i < 200; i++) {
      const a = await t.call(key, 'GET', `/v1/attachments/${id}`);
      if (a.body.status !== 'scanning' && a.body.status !== 'uploaded') return a.body;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('scan never finished');
  }

  it('gives a ready attachment to the model and lets read_attachment read it', async () => {
    const key = KEYS.memberA1;
    const id = await upload(key, 'notes.txt', 'The secret word is pineapple.', 'up-1');
    expect((await ready(key, id)).status).toBe('ready');
    const sid = await createSession(t, key);
    const r = await startRun(t, key, sid, {
      input: {
        role: 'user',
        content: [
          { type: 'text', text: script([{ tool_calls: [{ name: 'read_attachment', arguments: { attachment_id: id } }] }, { text: 'read it' }]) },
          { type: 'attachment_ref', attachment_id: id },
        ],
      },
    });
    expect(r.status).toBe(202);
    const done = await waitForRun(t, key, r.body.run_id, isTerminal);
    expect(done.status).toBe('completed');
    const events = await runEvents(t, key, r.body.run_id);
    const completed = events.find((e) => e.type === 'tool.completed');
    expect(JSON.stringify(completed.data.result)).toContain('pineapple');
  });

  it('refuses references that are foreign, rejected or not ready', async () => {
    const key = KEYS.memberA1;
    const sid = await createSession(t, key);
    const foreign = await upload(KEYS.memberA2, 'theirs.txt', 'not yours', 'up-2');
    await ready(KEYS.memberA2, foreign);
    const eicar = await upload(key, 'eicar.txt', 'X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*', 'up-3');
    expect((await ready(key, eicar)).status).toBe('rejected');
    const ref = (id: string) => ({ input: { role: 'user', content: [{ type: 'text', text: 'x' }, { type: 'attachment_ref', attachment_id: id }] } });
    const f = await startRun(t, key, sid, ref(foreign));
    expect(f.status).toBe(404);
    expect(f.body.error.code).toBe('attachment_not_found');
    const rej = await startRun(t, key, sid, ref(eicar));
    expect(rej.status).toBe(422);
    expect(rej.body.error.code).toBe('attachment_rejected');
    const list = await t.call(key, 'GET', `/v1/sessions/${sid}/runs`);
    expect(list.body.data).toHaveLength(0);
  });
});

describe('queued run expiry', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ RUN_QUEUE_TTL_MS: '1000' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('a queued run not started within RUN_QUEUE_TTL_MS expires; the run ahead of it is unaffected', async () => {
    const key = KEYS.memberA1;
    const sid = await createSession(t, key);
    const first = await startRun(t, key, sid, { input: userInput(script([{ sleep_ms: 7000, text: 'slow' }])) });
    const queued = await startRun(t, key, sid, { input: userInput('later'), concurrency: 'enqueue' });
    const expired = await waitForRun(t, key, queued.body.run_id, isTerminal, 15000);
    expect(expired.status).toBe('expired');
    expect(expired.started_at).toBeNull();
    const events = await runEvents(t, key, queued.body.run_id);
    expect(events.map((e) => e.type)).toEqual(['usage', 'run.finished']);
    expect(events[1].data.status).toBe('expired');
    const running = await t.call(key, 'GET', `/v1/runs/${first.body.run_id}`);
    expect(running.body.status).toBe('running');
    await t.call(key, 'POST', `/v1/runs/${first.body.run_id}/cancel`);
  });
});
