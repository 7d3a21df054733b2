import { KEYS, startTestApp, TestApp } from '../helpers/test-app';
import { contractOrderProblems, createSession, isTerminal, runEvents, script, startRun, userInput, waitForRun } from '../helpers/runs';

/** CONTRACT section 7: `concurrency: "steer"` / `"interrupt"` and the session's `default_concurrency`. */
describe('steering a run that is already running', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ SSE_KEEPALIVE_MS: '1000' });
  });
  afterAll(async () => {
    await t.close();
  });
  const key = KEYS.memberA1;

  async function waitForEvent(runId: string, type: string, ms = 10000): Promise<any[]> {
    const until = Date.now() + ms;
    for (;;) {
      const events = await runEvents(t, key, runId);
      if (events.some((e) => e.type === type)) return events;
      if (Date.now() > until) throw new Error(`no ${type} on ${runId}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  const steer = (sid: string, text: string, idem?: string) => startRun(t, key, sid, { input: userInput(text), concurrency: 'steer' }, idem);
  const message = async (sid: string, id: string) => (await t.call(key, 'GET', `/v1/sessions/${sid}/messages/${id}`)).body;
  const lastText = (events: any[]) => {
    const done = events.filter((e) => e.type === 'message.completed');
    return done[done.length - 1].data.content.find((p: any) => p.type === 'text')?.text;
  };

  it('while the model streams: committed at once, taken into the next model turn with run.input', async () => {
    const sid = await createSession(t, key);
    const before = (await t.call(key, 'GET', `/v1/sessions/${sid}`)).body.revision;
    const r = await startRun(t, key, sid, { input: userInput(script([{ text: 'a'.repeat(40), chunk_size: 2, delay_ms: 25 }])) });
    await waitForEvent(r.body.run_id, 'message.delta');
    const s = await steer(sid, script([{ text: 'steered answer' }]));
    expect(s.status).toBe(202);
    expect(s.body).toMatchObject({ run_id: r.body.run_id, session_id: sid, steered: true, status: 'running', stream: { url: `/v1/runs/${r.body.run_id}/events` } });
    // Committed at once: the session's revision moved for it (and for nothing else yet but the run's own input).
    expect((await message(sid, s.body.user_message_id)).run_id).toBe(r.body.run_id);
    expect((await t.call(key, 'GET', `/v1/sessions/${sid}`)).body.revision).toBeGreaterThanOrEqual(before + 2);
    const run = await waitForRun(t, key, r.body.run_id, isTerminal);
    expect(run).toMatchObject({ status: 'completed', step_count: 2 });
    const events = await runEvents(t, key, run.id);
    expect(contractOrderProblems(events)).toEqual([]);
    const types = events.map((e) => e.type);
    const input = types.indexOf('run.input');
    expect(events[input].data).toEqual({ message_id: s.body.user_message_id });
    expect(types.lastIndexOf('message.started')).toBeGreaterThan(input);
    expect(types.indexOf('message.completed')).toBeLessThan(input); // the streaming turn was not interrupted
    expect(lastText(events)).toBe('steered answer');
  });

  it('while a tool runs: the tool is never interrupted; the input is taken after it', async () => {
    const sid = await createSession(t, key);
    const r = await startRun(t, key, sid, { input: userInput(script([{ tool_calls: [{ name: 'slow_tool', arguments: { ms: 700 } }] }, { text: 'not this' }])) });
    await waitForEvent(r.body.run_id, 'tool.started');
    const s = await steer(sid, script([{ text: 'after the tool' }]));
    expect(s.body).toMatchObject({ run_id: r.body.run_id, steered: true });
    const run = await waitForRun(t, key, r.body.run_id, isTerminal);
    expect(run.status).toBe('completed');
    const events = await runEvents(t, key, run.id);
    const types = events.map((e) => e.type);
    expect(types).toContain('tool.completed');
    expect(types).not.toContain('tool.failed');
    expect(types.indexOf('run.input')).toBeGreaterThan(types.indexOf('tool.completed'));
    expect(lastText(events)).toBe('after the tool');
  });

  it('while waiting for an approval: kept for the model turn after it resumes', async () => {
    const sid = await createSession(t, key, { agent_id: 'support_agent' });
    const r = await startRun(t, key, sid, { input: userInput('Where is my order O-1001?') });
    await waitForRun(t, key, r.body.run_id, (x) => x.status === 'waiting_for_approval');
    const s = await steer(sid, script([{ text: 'thanks, noted' }]));
    expect(s.body).toMatchObject({ run_id: r.body.run_id, steered: true, status: 'waiting_for_approval' });
    // Still waiting: the input does not resume it.
    await new Promise((res) => setTimeout(res, 200));
    expect((await t.call(key, 'GET', `/v1/runs/${r.body.run_id}`)).body.status).toBe('waiting_for_approval');
    const approvals = await t.call(key, 'GET', `/v1/runs/${r.body.run_id}/approvals`);
    const decided = await t.call(key, 'POST', `/v1/runs/${r.body.run_id}/approvals/${approvals.body.data[0].id}`, { decision: 'approve' });
    expect(decided.status).toBe(200);
    const run = await waitForRun(t, key, r.body.run_id, isTerminal);
    expect(run.status).toBe('completed');
    const events = await runEvents(t, key, run.id);
    const types = events.map((e) => e.type);
    expect(types.indexOf('run.input')).toBeGreaterThan(types.indexOf('approval.accepted'));
    expect(types.indexOf('run.input')).toBeGreaterThan(types.indexOf('tool.completed'));
    expect(lastText(events)).toBe('thanks, noted');
  });

  it('racing the run end (50 trials): every steered message is taken by exactly one run, none is lost', async () => {
    const sid = await createSession(t, key);
    const steered: string[] = [];
    for (let i = 0; i < 50; i++) {
      const r = await startRun(t, key, sid, { input: userInput(script([{ text: `run ${i}` }])), concurrency: 'enqueue' });
      expect(r.status).toBe(202);
      // Sometimes before it starts, sometimes while it answers, sometimes just after it ended.
      if (i % 3 === 1) await new Promise((res) => setTimeout(res, i % 7));
      const s = await steer(sid, script([{ text: `steer ${i}` }]));
      expect(s.status).toBe(202);
      steered.push(s.body.user_message_id);
    }
    // Every run of the session ends.
    const until = Date.now() + 60000;
    let runs: any[] = [];
    for (;;) {
      runs = [];
      let after: string | undefined;
      for (;;) {
        const page = await t.call(key, 'GET', `/v1/sessions/${sid}/runs?limit=100&order=asc${after ? `&after=${after}` : ''}`);
        runs.push(...page.body.data);
        if (!page.body.has_more) break;
        after = page.body.last_id;
      }
      if (runs.every(isTerminal)) break;
      if (Date.now() > until) throw new Error('runs did not finish');
      await new Promise((res) => setTimeout(res, 100));
    }
    const takenBy = new Map<string, string[]>();
    for (const run of runs) {
      expect(run.status).toBe('completed');
      const events = await runEvents(t, key, run.id);
      expect(contractOrderProblems(events)).toEqual([]);
      const ids = events.filter((e) => e.type === 'run.input').map((e) => e.data.message_id);
      if (steered.includes(run.user_message_id)) ids.push(run.user_message_id); // a run started for it
      for (const id of ids) takenBy.set(id, [...(takenBy.get(id) ?? []), run.id]);
    }
    for (const id of steered) {
      expect(takenBy.get(id)).toHaveLength(1);
      expect((await message(sid, id)).run_id).toBe(takenBy.get(id)![0]);
    }
    // One lock order everywhere (session row, then run row): no writer was a deadlock victim.
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(metrics).toMatch(/^agent_api_db_deadlock_retries_total 0$/m);
  }, 180000);

  it('interrupt while a tool runs: the active run is cancelled with its outcome recorded, then the new run runs', async () => {
    const sid = await createSession(t, key);
    const r = await startRun(t, key, sid, { input: userInput(script([{ tool_calls: [{ name: 'slow_tool', arguments: { ms: 20000 } }] }, { text: 'never' }])) });
    await waitForEvent(r.body.run_id, 'tool.started');
    const i = await startRun(t, key, sid, { input: userInput(script([{ text: 'the new run' }])), concurrency: 'interrupt' });
    expect(i.status).toBe(202);
    expect(i.body.run_id).not.toBe(r.body.run_id);
    expect(i.body.status).toBe('queued');
    expect(i.body.steered).toBeUndefined();
    const first = await waitForRun(t, key, r.body.run_id, isTerminal);
    expect(first.status).toBe('cancelled');
    const events = await runEvents(t, key, first.id);
    expect(contractOrderProblems(events)).toEqual([]);
    const outcome = events.find((e) => e.type === 'tool.completed' || e.type === 'tool.failed');
    expect(outcome).toBeDefined();
    const second = await waitForRun(t, key, i.body.run_id, isTerminal);
    expect(second.status).toBe('completed');
    expect(new Date(second.started_at).getTime()).toBeGreaterThanOrEqual(new Date(first.finished_at).getTime());
  });

  it('an idempotent retry of a steer replays it: one message, the same answer', async () => {
    const sid = await createSession(t, key);
    const r = await startRun(t, key, sid, { input: userInput(script([{ sleep_ms: 3000 }, { text: 'x' }])) });
    await waitForRun(t, key, r.body.run_id, (x) => x.status === 'running');
    const idem = `steer-${Date.now()}`;
    const a = await steer(sid, script([{ text: 'once' }]), idem);
    const b = await steer(sid, script([{ text: 'once' }]), idem);
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    // The same answer, its receipt as it is now (CONTRACT 7: a replay answers the current receipt).
    const { receipt: ra, ...restA } = a.body;
    const { receipt: rb, ...restB } = b.body;
    expect(restB).toEqual(restA);
    expect(ra).toMatchObject({ disposition: 'steered', run_id: r.body.run_id });
    expect(rb).toMatchObject({ id: ra.id, disposition: 'steered', run_id: r.body.run_id });
    await waitForRun(t, key, r.body.run_id, isTerminal);
    const msgs = await t.call(key, 'GET', `/v1/sessions/${sid}/messages?limit=100`);
    expect(msgs.body.data.filter((m: any) => m.role === 'user')).toHaveLength(2);
  });

  it("a run that omits concurrency follows the session's default_concurrency", async () => {
    // Steer by default (seed 002): a new session without default_concurrency shows `steer`.
    const plain = await t.call(key, 'POST', '/v1/sessions', {});
    expect(plain.status).toBe(201);
    expect(plain.body.default_concurrency).toBe('steer');
    const s = await t.call(key, 'POST', '/v1/sessions', { default_concurrency: 'steer' });
    expect(s.status).toBe(201);
    expect(s.body.default_concurrency).toBe('steer');
    const sid = s.body.id;
    expect((await t.call(key, 'GET', `/v1/sessions/${sid}`)).body.default_concurrency).toBe('steer');
    const r = await startRun(t, key, sid, { input: userInput(script([{ sleep_ms: 3000 }, { text: 'x' }])) });
    expect(r.body.steered).toBeUndefined();
    await waitForRun(t, key, r.body.run_id, (x) => x.status === 'running');
    const st = await startRun(t, key, sid, { input: userInput(script([{ text: 'by default' }])) });
    expect(st.body).toMatchObject({ run_id: r.body.run_id, steered: true });
    const run = await waitForRun(t, key, r.body.run_id, isTerminal);
    expect(lastText(await runEvents(t, key, run.id))).toBe('by default');
    const u = await t.call(key, 'POST', `/v1/sessions/${sid}`, { default_concurrency: 'reject' });
    expect(u.status).toBe(200);
    expect(u.body.default_concurrency).toBe('reject');
    const listed = await t.call(key, 'GET', '/v1/sessions?limit=100');
    expect(listed.body.data.find((x: any) => x.id === sid).default_concurrency).toBe('reject');
    const again = await startRun(t, key, sid, { input: userInput(script([{ sleep_ms: 3000 }, { text: 'y' }])) });
    await waitForRun(t, key, again.body.run_id, (x) => x.status === 'running');
    const busy = await startRun(t, key, sid, { input: userInput('hi') });
    expect(busy.status).toBe(409);
    expect(busy.body.error.code).toBe('session_busy');
    const bad = await t.call(key, 'POST', '/v1/sessions', { default_concurrency: 'sometimes' });
    expect(bad.status).toBe(400);
  });
});
