import { contractOrderProblems, createSession, isTerminal, runEvents, script, startRun, userInput, waitForRun } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

const waiting = (status: string) => (r: any) => r.status === status || isTerminal(r);

describe('approvals and client tools', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ APPROVAL_TTL_MS: '60000' });
  });
  afterAll(async () => {
    await t.close();
  });
  const key = KEYS.memberA1;

  async function orderRun(text = 'Please help with order O-1001, it has not arrived') {
    const sid = await createSession(t, key);
    const r = await startRun(t, key, sid, { input: userInput(text) });
    const run = await waitForRun(t, key, r.body.run_id, waiting('waiting_for_approval'));
    expect(run.status).toBe('waiting_for_approval');
    expect(run.pending_approvals).toHaveLength(1);
    return { sid, run, approvalId: run.pending_approvals[0].approval_id as string };
  }

  it('runs the built-in order scenario: approve -> the ticket is created once and named', async () => {
    const { sid, run, approvalId } = await orderRun();
    const list = await t.call(key, 'GET', `/v1/runs/${run.id}/approvals`);
    expect(list.body.data[0]).toMatchObject({ id: approvalId, object: 'approval', tool_name: 'create_ticket', status: 'pending', risk: 'approve' });
    const d = await t.call(key, 'POST', `/v1/runs/${run.id}/approvals/${approvalId}`, { decision: 'approve', reason: 'ok' });
    expect(d.status).toBe(200);
    expect(d.body).toMatchObject({ status: 'approved', decided_by: 'user_a1', reason: 'ok' });
    const done = await waitForRun(t, key, run.id, isTerminal);
    expect(done.status).toBe('completed');
    expect(done.step_count).toBe(3);
    const events = await runEvents(t, key, run.id);
    expect(contractOrderProblems(events)).toEqual([]);
    const types = events.map((e) => e.type);
    expect(types.filter((x) => x === 'run.waiting')).toHaveLength(1);
    expect(types.filter((x) => x === 'run.resumed')).toHaveLength(1);
    expect(types.indexOf('approval.requested')).toBeLessThan(types.indexOf('approval.accepted'));
    const ticket = events.find((e) => e.type === 'tool.completed' && e.data.tool_name === 'create_ticket');
    expect(events.filter((e) => e.type === 'tool.started' && e.data.tool_name === 'create_ticket')).toHaveLength(1);
    const ticketId = JSON.stringify(ticket.data.result).match(/T-[A-Z0-9]+/)![0];
    const final = await t.call(key, 'GET', `/v1/sessions/${sid}/messages/${done.final_message_id}`);
    expect(final.body.content[0].text).toContain(ticketId);
    const msgs = await t.call(key, 'GET', `/v1/sessions/${sid}/messages?limit=100`);
    expect(msgs.body.data.filter((m: any) => m.role === 'user')).toHaveLength(1);
    // The same decision again: 200 unchanged; a different one: 409.
    const again = await t.call(key, 'POST', `/v1/runs/${run.id}/approvals/${approvalId}`, { decision: 'approve' });
    expect(again.status).toBe(200);
    expect(again.body.decided_at).toBe(d.body.decided_at);
    const flip = await t.call(key, 'POST', `/v1/runs/${run.id}/approvals/${approvalId}`, { decision: 'reject' });
    expect(flip.status).toBe(409);
    expect(flip.body.error.code).toBe('approval_already_decided');
  });

  it('reject: the tool is not executed and the model continues with the rejection', async () => {
    const { run, approvalId } = await orderRun();
    const d = await t.call(key, 'POST', `/v1/runs/${run.id}/approvals/${approvalId}`, { decision: 'reject', reason: 'not now' });
    expect(d.body.status).toBe('rejected');
    const done = await waitForRun(t, key, run.id, isTerminal);
    expect(done.status).toBe('completed');
    const events = await runEvents(t, key, run.id);
    expect(contractOrderProblems(events)).toEqual([]);
    expect(events.some((e) => e.type === 'tool.started' && e.data.tool_name === 'create_ticket')).toBe(false);
    expect(events.some((e) => e.type === 'approval.rejected' && e.data.reason === 'not now')).toBe(true);
  });

  it('10 concurrent mixed decisions: exactly one wins', async () => {
    const { run, approvalId } = await orderRun();
    const decisions = Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? 'approve' : 'reject'));
    const results = await Promise.all(decisions.map((decision) => t.call(key, 'POST', `/v1/runs/${run.id}/approvals/${approvalId}`, { decision })));
    const final = (await t.call(key, 'GET', `/v1/runs/${run.id}/approvals`)).body.data[0].status;
    const winner = final === 'approved' ? 'approve' : 'reject';
    results.forEach((r, i) => {
      if (decisions[i] === winner) expect(r.status).toBe(200);
      else expect(r.body.error.code).toBe('approval_already_decided');
    });
    await waitForRun(t, key, run.id, isTerminal);
    const events = await runEvents(t, key, run.id);
    expect(events.filter((e) => e.type === 'approval.accepted' || e.type === 'approval.rejected')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'run.resumed')).toHaveLength(1);
  });

  it('approval after cancel is 409 approval_not_pending; foreign callers get 404', async () => {
    const { run, approvalId } = await orderRun();
    expect((await t.call(KEYS.memberA2, 'POST', `/v1/runs/${run.id}/approvals/${approvalId}`, { decision: 'approve' })).status).toBe(404);
    expect((await t.call(KEYS.adminB, 'GET', `/v1/runs/${run.id}/approvals`)).status).toBe(404);
    const c = await t.call(key, 'POST', `/v1/runs/${run.id}/cancel`);
    expect(c.body.status).toBe('cancelled');
    const d = await t.call(key, 'POST', `/v1/runs/${run.id}/approvals/${approvalId}`, { decision: 'approve' });
    expect(d.status).toBe(409);
    expect(d.body.error.code).toBe('approval_not_pending');
    const list = await t.call(key, 'GET', `/v1/runs/${run.id}/approvals`);
    expect(list.body.data[0].status).toBe('cancelled');
    const missing = await t.call(key, 'POST', `/v1/runs/${run.id}/approvals/apr_01M8NX0000000000000000000`, { decision: 'approve' });
    expect(missing.body.error.code).toBe('approval_not_found');
    const bad = await t.call(key, 'POST', `/v1/runs/${run.id}/approvals/${approvalId}`, { decision: 'maybe' });
    expect(bad.status).toBe(400);
  });

  it('client tool round trip: waiting_for_tool -> tool_outputs -> completed', async () => {
    const sid = await createSession(t, key);
    const r = await startRun(t, key, sid, { input: userInput(script([{ tool_calls: [{ name: 'lookup_customer', arguments: { email: 'ada@example.com' } }] }, { text: 'found' }])) });
    const run = await waitForRun(t, key, r.body.run_id, waiting('waiting_for_tool'));
    expect(run.status).toBe('waiting_for_tool');
    expect(run.pending_tool_calls).toHaveLength(1);
    const callId = run.pending_tool_calls[0].tool_call_id;
    // lookup_customer is private: members see its arguments redacted, admins see them.
    expect(run.pending_tool_calls[0].arguments).toEqual({ redacted: true });
    const adminView = await t.call(KEYS.adminA, 'GET', `/v1/runs/${run.id}`);
    expect(adminView.body.pending_tool_calls[0].arguments).toEqual({ email: 'ada@example.com' });
    const wrong = await t.call(key, 'POST', `/v1/runs/${run.id}/tool_outputs`, { tool_outputs: [{ tool_call_id: 'call_nope', output: {} }] });
    expect(wrong.status).toBe(409);
    expect(wrong.body.error.code).toBe('tool_output_not_expected');
    const ok = await t.call(key, 'POST', `/v1/runs/${run.id}/tool_outputs`, { tool_outputs: [{ tool_call_id: callId, output: { name: 'Ada', tier: 'gold' } }] });
    expect(ok.status).toBe(200);
    const done = await waitForRun(t, key, run.id, isTerminal);
    expect(done.status).toBe('completed');
    const events = await runEvents(t, key, run.id);
    expect(contractOrderProblems(events)).toEqual([]);
    const completed = events.find((e) => e.type === 'tool.completed');
    expect(completed.data.result).toEqual({ redacted: true });
    const adminEvents = await runEvents(t, KEYS.adminA, run.id);
    expect(adminEvents.find((e) => e.type === 'tool.completed').data.result).toEqual({ name: 'Ada', tier: 'gold' });
    expect(adminEvents.map((e) => e.sequence)).toEqual(events.map((e) => e.sequence));
    // Raw, unredacted data stays in the audit trail, which is hash-chained.
    const audit = await t.call(KEYS.adminA, 'GET', `/v1/admin/audit?run_id=${run.id}&action=run_event.tool.completed`);
    expect(audit.status).toBe(200);
    expect(JSON.stringify(audit.body.data)).toContain('"tier":"gold"');
    const verify = await t.call(KEYS.adminA, 'GET', '/v1/admin/audit/verify');
    expect(verify.body).toMatchObject({ ok: true });
    expect(verify.body.checked).toBeGreaterThan(events.length);
    const late = await t.call(key, 'POST', `/v1/runs/${run.id}/tool_outputs`, { tool_outputs: [{ tool_call_id: callId, output: {} }] });
    expect(late.body.error.code).toBe('run_finished');
  });
});

describe('approval expiry', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ APPROVAL_TTL_MS: '1000' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('an undecided approval expires the run', async () => {
    const key = KEYS.memberA1;
    const sid = await createSession(t, key);
    const r = await startRun(t, key, sid, { input: userInput('order O-1001 please') });
    const done = await waitForRun(t, key, r.body.run_id, (x) => x.status === 'expired', 15000);
    expect(done.error).toMatchObject({ code: 'approval_expired' });
    const approvals = await t.call(key, 'GET', `/v1/runs/${r.body.run_id}/approvals`);
    expect(approvals.body.data[0].status).toBe('expired');
    const events = await runEvents(t, key, r.body.run_id);
    expect(contractOrderProblems(events)).toEqual([]);
  });
});
