import { createSession, isTerminal, script, startRun, userInput, waitForRun } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * Requests on a run (approval decisions, client tool outputs, cancel) carry the run's session in
 * their audit records - successes, replays and refused ones alike - so filtering the trail by
 * `session_id` finds them. A caller who cannot see the run learns nothing and records no session.
 */
describe('audit records of requests on a run name its session', () => {
  let t: TestApp;
  const key = KEYS.memberA1;
  const waiting = (status: string) => (r: any) => r.status === status || isTerminal(r);

  beforeAll(async () => {
    t = await startTestApp({ APPROVAL_TTL_MS: '60000' });
  });
  afterAll(async () => {
    await t.close();
  });

  async function records(adminKey: string, query: string): Promise<any[]> {
    const res = await t.call(adminKey, 'GET', `/v1/admin/audit?order=asc&limit=100&${query}`);
    expect(res.status).toBe(200);
    expect(res.body.has_more).toBe(false);
    return res.body.data;
  }
  const requestsOnRuns = (rs: any[]) => rs.filter((r) => r.action.startsWith('POST /v1/runs/'));

  it('approval decisions: decided, repeated, replayed, refused and invalid ones', async () => {
    const sid = await createSession(t, key);
    const started = await startRun(t, key, sid, { input: userInput('Please help with order O-1001, it has not arrived') });
    const run = await waitForRun(t, key, started.body.run_id, waiting('waiting_for_approval'));
    expect(run.status).toBe('waiting_for_approval');
    const path = `/v1/runs/${run.id}/approvals/${run.pending_approvals[0].approval_id}`;

    const invalid = await t.call(key, 'POST', path, { decision: 'maybe' });
    expect(invalid.status).toBe(400);
    const approved = await t.call(key, 'POST', path, { decision: 'approve' }, { 'idempotency-key': 'audit-decision-1' });
    expect(approved.status).toBe(200);
    expect(approved.body).not.toHaveProperty('session_id');
    const replayed = await t.call(key, 'POST', path, { decision: 'approve' }, { 'idempotency-key': 'audit-decision-1' });
    expect(replayed.status).toBe(200);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    const same = await t.call(key, 'POST', path, { decision: 'approve' });
    expect(same.status).toBe(200);
    const flip = await t.call(key, 'POST', path, { decision: 'reject' });
    expect(flip.body.error.code).toBe('approval_already_decided');
    // Callers who cannot see the run: the same 404 as a missing one, and no session recorded.
    expect((await t.call(KEYS.memberA2, 'POST', path, { decision: 'reject' })).body.error.code).toBe('run_not_found');
    expect((await t.call(KEYS.adminB, 'POST', path, { decision: 'reject' })).body.error.code).toBe('run_not_found');

    const bySession = requestsOnRuns(await records(KEYS.adminA, `session_id=${sid}`));
    expect(bySession.map((r) => [r.action, r.status, r.outcome, r.actor_subject_id])).toEqual([
      ['POST /v1/runs/:id/approvals/:approval_id', 400, 'invalid_request', 'user_a1'],
      ['POST /v1/runs/:id/approvals/:approval_id', 200, 'ok', 'user_a1'],
      ['POST /v1/runs/:id/approvals/:approval_id', 200, 'ok', 'user_a1'],
      ['POST /v1/runs/:id/approvals/:approval_id', 200, 'ok', 'user_a1'],
      ['POST /v1/runs/:id/approvals/:approval_id', 409, 'approval_already_decided', 'user_a1'],
    ]);
    for (const r of bySession) expect(r).toMatchObject({ session_id: sid, run_id: run.id });
    expect(bySession[2].data.response.idempotent_replayed).toBe(true);

    const byRun = await records(KEYS.adminA, `run_id=${run.id}&action=${encodeURIComponent('POST /v1/runs/:id/approvals/:approval_id')}`);
    expect(byRun.map((r) => [r.actor_subject_id, r.outcome, r.session_id])).toEqual([
      ...bySession.map((r) => ['user_a1', r.outcome, sid]),
      ['user_a2', 'run_not_found', null],
    ]);
    const tenantB = await records(KEYS.adminB, `action=${encodeURIComponent('POST /v1/runs/:id/approvals/:approval_id')}`);
    expect(tenantB.map((r) => [r.actor_subject_id, r.outcome, r.session_id])).toEqual([['admin_b', 'run_not_found', null]]);
  });

  it('tool outputs and cancel: accepted, unexpected, on a finished run, invalid', async () => {
    const sid = await createSession(t, key);
    const started = await startRun(t, key, sid, {
      input: userInput(script([{ tool_calls: [{ name: 'lookup_customer', arguments: { email: 'ada@example.com' } }] }, { text: 'found' }])),
    });
    const run = await waitForRun(t, key, started.body.run_id, waiting('waiting_for_tool'));
    expect(run.status).toBe('waiting_for_tool');
    const callId = run.pending_tool_calls[0].tool_call_id;
    const path = `/v1/runs/${run.id}/tool_outputs`;

    expect((await t.call(key, 'POST', path, { tool_outputs: 'nope' })).status).toBe(400);
    expect((await t.call(key, 'POST', path, { tool_outputs: [{ tool_call_id: 'call_nope', output: {} }] })).body.error.code).toBe('tool_output_not_expected');
    expect((await t.call(key, 'POST', path, { tool_outputs: [{ tool_call_id: callId, output: { name: 'Ada' } }] })).status).toBe(200);
    await waitForRun(t, key, run.id, isTerminal);
    expect((await t.call(key, 'POST', path, { tool_outputs: [{ tool_call_id: callId, output: {} }] })).body.error.code).toBe('run_finished');
    expect((await t.call(key, 'POST', `/v1/runs/${run.id}/cancel`)).body.error.code).toBe('run_finished');
    expect((await t.call(KEYS.memberA2, 'POST', path, { tool_outputs: [{ tool_call_id: callId, output: {} }] })).body.error.code).toBe('run_not_found');

    const bySession = requestsOnRuns(await records(KEYS.adminA, `session_id=${sid}`));
    expect(bySession.map((r) => [r.action, r.status, r.outcome])).toEqual([
      ['POST /v1/runs/:id/tool_outputs', 400, 'invalid_request'],
      ['POST /v1/runs/:id/tool_outputs', 409, 'tool_output_not_expected'],
      ['POST /v1/runs/:id/tool_outputs', 200, 'ok'],
      ['POST /v1/runs/:id/tool_outputs', 409, 'run_finished'],
      ['POST /v1/runs/:id/cancel', 409, 'run_finished'],
    ]);
    for (const r of bySession) expect(r).toMatchObject({ session_id: sid, run_id: run.id, actor_subject_id: 'user_a1' });
    const foreign = await records(KEYS.adminA, `run_id=${run.id}&actor=user_a2`);
    expect(foreign.map((r) => [r.outcome, r.session_id])).toEqual([['run_not_found', null]]);
  });
});
