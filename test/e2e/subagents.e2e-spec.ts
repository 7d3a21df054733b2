import { contractOrderProblems, createSession, isTerminal, runEvents, script, startRun, userInput, waitForRun } from '../helpers/runs';
import { RunSignals } from '../../src/modules/runs/application/run-signals';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * Subagents (CONTRACT 16) on the native API: a parent run creates child sessions whose runs work
 * while it goes on, waits for them (waiting_for_subagents) and reads their final texts; parent
 * events subagent.created|completed; GET /sessions/{id}/subagents; max_concurrent; the children's
 * usage counts toward the parent's; a wait's timeout; cancel cascades to the children's runs.
 */
describe('multi-agent: subagents (CONTRACT 16)', () => {
  let t: TestApp;
  const admin = KEYS.adminA;
  const member = KEYS.memberA1;
  /** A child's own script: it sleeps (so that it is still running while the parent goes on), then answers. */
  const child = (text: string, sleepMs = 2500) => script([{ sleep_ms: sleepMs, text }]);

  beforeAll(async () => {
    t = await startTestApp();
    expect((await t.call(admin, 'POST', '/v1/agents', { id: 'researcher', instructions: 'Research.', tools: ['get_time'] })).status).toBe(201);
    const lead = await t.call(admin, 'POST', '/v1/agents', { id: 'lead', instructions: 'Delegate.', tools: [], subagents: { enabled: true, agents: ['researcher'], max_concurrent: 2 } });
    expect(lead.status).toBe(201);
    expect(lead.body.subagents).toEqual({ enabled: true, agents: [{ agent_id: 'researcher', version: '1' }], max_concurrent: 2 });
  }, 120_000);

  afterAll(async () => {
    await t?.close();
  });

  it('subagents.agents must be agents of the tenant (400)', async () => {
    const bad = await t.call(admin, 'POST', '/v1/agents', { id: 'bad_lead', tools: [], subagents: { enabled: true, agents: ['nobody'] } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.errors).toEqual([expect.objectContaining({ field: 'subagents.agents[0]' })]);
    const shape = await t.call(admin, 'POST', '/v1/agents', { id: 'bad_lead', tools: [], subagents: { enabled: true, max_concurrent: 0 } });
    expect(shape.status).toBe(400);
  });

  it('create_subagent x2 (a third is refused: max_concurrent), wait_for_subagents returns their texts; subagents are listed child sessions', async () => {
    const sid = await createSession(t, member, { agent_id: 'lead' });
    const res = await startRun(t, member, sid, {
      input: userInput(
        script([
          {
            tool_calls: [
              { name: 'create_subagent', arguments: { agent_id: 'researcher', name: 'r1', instructions: child('alpha') } },
              { name: 'create_subagent', arguments: { name: 'r2', instructions: child('beta') } },
              { name: 'create_subagent', arguments: { name: 'r3', instructions: child('gamma') } },
            ],
          },
          { tool_calls: [{ name: 'wait_for_subagents', arguments: {} }] },
          { text: 'all done' },
        ]),
      ),
    });
    expect(res.status).toBe(202);
    const parent = await waitForRun(t, member, res.body.run_id, isTerminal, 60_000);
    expect(parent).toMatchObject({ status: 'completed', step_count: 3 });
    const events = await runEvents(t, member, parent.id);
    expect(contractOrderProblems(events)).toEqual([]);
    const created = events.filter((e) => e.type === 'subagent.created');
    expect(created.map((e) => e.data.name)).toEqual(['r1', 'r2']);
    expect(created[0].data).toMatchObject({ agent_id: 'researcher' });
    expect(created[1].data).toMatchObject({ agent_id: 'lead' });
    const refused = events.find((e) => e.type === 'tool.failed');
    expect(refused.data.error).toMatchObject({ code: 'max_concurrent_subagents' });
    // The parent waited, then read both final texts.
    expect(events.some((e) => e.type === 'run.waiting' && e.data.status === 'waiting_for_subagents')).toBe(true);
    const completed = events.filter((e) => e.type === 'subagent.completed');
    expect(completed.map((e) => e.data.status)).toEqual(['completed', 'completed']);
    const waited = events.find((e) => e.type === 'tool.completed' && e.data.tool_name === 'wait_for_subagents');
    expect(waited.data.result).toMatchObject({ timed_out: false, subagents: [expect.objectContaining({ name: 'r1', status: 'completed', text: 'alpha' }), expect.objectContaining({ name: 'r2', status: 'completed', text: 'beta' })] });
    // The parent's model read it: the wait's result is a tool message of the parent's session.
    const history = (await t.call(member, 'GET', `/v1/sessions/${sid}/messages?limit=100`)).body.data;
    const result = history.find((m: any) => m.role === 'tool' && m.content[0].tool_name === 'wait_for_subagents');
    expect(result.content[0]).toMatchObject({ ok: true, result: { timed_out: false, subagents: [expect.objectContaining({ text: 'alpha' }), expect.objectContaining({ text: 'beta' })] } });

    // GET /sessions/{id}/subagents: child sessions naming the parent; their turns are their runs.
    const list = await t.call(member, 'GET', `/v1/sessions/${sid}/subagents`);
    expect(list.status).toBe(200);
    expect(list.body.data.map((s: any) => [s.parent_session_id, s.parent_run_id, s.subagent, s.agent_id])).toEqual([
      [sid, parent.id, { name: 'r1', status: 'active' }, 'researcher'],
      [sid, parent.id, { name: 'r2', status: 'active' }, 'lead'],
    ]);
    const childRuns = await t.call(member, 'GET', `/v1/sessions/${list.body.data[0].id}/runs`);
    // A child's run names its parent (so do webhooks, which carry the Run).
    expect(childRuns.body.data).toEqual([expect.objectContaining({ status: 'completed', id: created[0].data.run_id, parent_run_id: parent.id })]);
    expect(parent.parent_run_id).toBeUndefined();
    // The children's usage counts toward the parent's.
    const childUsage = await Promise.all(created.map(async (e) => (await t.call(member, 'GET', `/v1/runs/${e.data.run_id}`)).body.usage));
    expect(parent.usage.input_tokens).toBeGreaterThan(childUsage[0].input_tokens + childUsage[1].input_tokens);
    // Another member does not see the session, nor its subagents; an admin does.
    expect((await t.call(KEYS.memberA2, 'GET', `/v1/sessions/${sid}/subagents`)).status).toBe(404);
    expect((await t.call(admin, 'GET', `/v1/sessions/${sid}/subagents`)).body.data).toHaveLength(2);
    // Paged like every list: oldest first by default, `limit`, `after`, `order`.
    const first = await t.call(member, 'GET', `/v1/sessions/${sid}/subagents?limit=1`);
    expect(first.body).toMatchObject({ object: 'list', has_more: true, first_id: list.body.data[0].id, last_id: list.body.data[0].id });
    const next = await t.call(member, 'GET', `/v1/sessions/${sid}/subagents?limit=1&after=${first.body.last_id}`);
    expect(next.body).toMatchObject({ has_more: false, data: [expect.objectContaining({ id: list.body.data[1].id })] });
    expect((await t.call(member, 'GET', `/v1/sessions/${sid}/subagents?order=desc`)).body.data.map((x: any) => x.id)).toEqual([list.body.data[1].id, list.body.data[0].id]);
    expect((await t.call(member, 'GET', `/v1/sessions/${sid}/subagents?after=sess_nope`)).body.error.code).toBe('invalid_cursor');
    // The audit trail records each spawn (the parent's subagent.created run events, unredacted).
    for (let i = 0; ; i++) {
      const audit = await t.call(admin, 'GET', `/v1/admin/audit?run_id=${parent.id}&action=run_event.subagent.created`);
      expect(audit.status).toBe(200);
      if (audit.body.data.length === 2 || i === 100) {
        expect(audit.body.data.map((r: any) => r.data.data.name).sort()).toEqual(['r1', 'r2']);
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }, 120_000);

  it('wait_for_subagents with timeout_ms answers timed_out; cancelling a waiting parent cancels its subagents\' active runs', async () => {
    const sid = await createSession(t, member, { agent_id: 'lead' });
    const first = await startRun(t, member, sid, {
      input: userInput(
        script([
          { tool_calls: [{ name: 'create_subagent', arguments: { name: 'slow', instructions: child('late', 60_000) } }] },
          { tool_calls: [{ name: 'wait_for_subagents', arguments: { timeout_ms: 300 } }] },
          { tool_calls: [{ name: 'close_subagent', arguments: { subagent_id: 'slow' } }] },
          { text: 'moved on' },
        ]),
      ),
    });
    const done = await waitForRun(t, member, first.body.run_id, isTerminal, 60_000);
    expect(done.status).toBe('completed');
    const firstEvents = await runEvents(t, member, done.id);
    const waited = firstEvents.find((e) => e.type === 'tool.completed' && e.data.tool_name === 'wait_for_subagents');
    expect(waited.data.result).toMatchObject({ timed_out: true, subagents: [expect.objectContaining({ name: 'slow', text: null })] });
    // close_subagent: subagent.closed, the child session closed and its active run cancelled.
    const slow = firstEvents.find((e) => e.type === 'subagent.created').data;
    expect(firstEvents.find((e) => e.type === 'subagent.closed').data).toEqual({ subagent_id: slow.subagent_id });
    expect((await waitForRun(t, member, slow.run_id, isTerminal, 30_000)).status).toBe('cancelled');
    for (let i = 0; ; i++) {
      const listed = (await t.call(member, 'GET', `/v1/sessions/${sid}/subagents`)).body.data[0];
      if (listed.subagent.status === 'closed' || i === 100) {
        expect(listed.subagent).toEqual({ name: 'slow', status: 'closed' });
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }

    const second = await startRun(t, member, sid, {
      input: userInput(script([{ tool_calls: [{ name: 'create_subagent', arguments: { name: 'slower', instructions: child('never', 60_000) } }] }, { tool_calls: [{ name: 'wait_for_subagents', arguments: {} }] }])),
    });
    await waitForRun(t, member, second.body.run_id, (r) => r.status === 'waiting_for_subagents', 60_000);
    const created = (await runEvents(t, member, second.body.run_id)).find((e) => e.type === 'subagent.created');
    expect((await t.call(member, 'POST', `/v1/runs/${second.body.run_id}/cancel`)).status).toBe(202);
    expect((await waitForRun(t, member, second.body.run_id, isTerminal)).status).toBe('cancelled');
    // The cascade: the child's active run is cancelled too.
    expect((await waitForRun(t, member, created.data.run_id, isTerminal, 30_000)).status).toBe('cancelled');
  }, 180_000);

  it("a child's end whose report is lost (as by a crash right after its commit) is read by the waiting parent's recheck", async () => {
    const signals = t.app.get(RunSignals);
    const report = signals.subagentRunEnded.bind(signals);
    let dropped = 0;
    signals.subagentRunEnded = () => void dropped++;
    try {
      const sid = await createSession(t, member, { agent_id: 'lead' });
      const res = await startRun(t, member, sid, {
        input: userInput(script([{ tool_calls: [{ name: 'create_subagent', arguments: { name: 'quiet', instructions: child('found it', 300) } }] }, { tool_calls: [{ name: 'wait_for_subagents', arguments: {} }] }, { text: 'ok' }])),
      });
      const parent = await waitForRun(t, member, res.body.run_id, isTerminal, 60_000);
      expect(parent.status).toBe('completed');
      expect(dropped).toBe(1);
      const waited = (await runEvents(t, member, parent.id)).find((e) => e.type === 'tool.completed' && e.data.tool_name === 'wait_for_subagents');
      expect(waited.data.result).toMatchObject({ timed_out: false, subagents: [expect.objectContaining({ status: 'completed', text: 'found it' })] });
    } finally {
      signals.subagentRunEnded = report;
    }
  }, 120_000);

  it('send_subagent_input gives an ended subagent its next run (a turn of the same child session); the parent waits for it again', async () => {
    const sid = await createSession(t, member, { agent_id: 'lead' });
    const res = await startRun(t, member, sid, {
      input: userInput(
        script([
          { tool_calls: [{ name: 'create_subagent', arguments: { name: 'w', instructions: child('first', 10) } }] },
          { tool_calls: [{ name: 'wait_for_subagents', arguments: {} }] },
          { tool_calls: [{ name: 'send_subagent_input', arguments: { subagent_id: 'w', input: child('second', 10) } }] },
          { tool_calls: [{ name: 'wait_for_subagents', arguments: { subagent_ids: ['w'] } }] },
          { text: 'both' },
        ]),
      ),
    });
    const parent = await waitForRun(t, member, res.body.run_id, isTerminal, 60_000);
    expect(parent.status).toBe('completed');
    const events = await runEvents(t, member, parent.id);
    expect(events.filter((e) => e.type === 'subagent.created')).toHaveLength(1);
    const waits = events.filter((e) => e.type === 'tool.completed' && e.data.tool_name === 'wait_for_subagents');
    expect(waits.map((e) => e.data.result.subagents[0].text)).toEqual(['first', 'second']);
    const [sub] = (await t.call(member, 'GET', `/v1/sessions/${sid}/subagents`)).body.data;
    const turns = (await t.call(member, 'GET', `/v1/sessions/${sub.id}/runs?order=asc`)).body.data;
    expect(turns.map((r: any) => r.status)).toEqual(['completed', 'completed']);
  }, 120_000);
});
