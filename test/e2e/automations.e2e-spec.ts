import { AutomationInvoker } from '../../src/modules/automations/application/automation-invoker';
import { AutomationClock } from '../../src/modules/automations/domain/automation-clock';
import { SessionTtlSweeper } from '../../src/modules/sessions/application/ttl/session-ttl.sweeper';
import { createSession, isTerminal, script, startRun, userInput, waitForRun } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';
import { WebhookReceiver } from '../helpers/webhook-receiver';

/**
 * CONTRACT section 17 on the native API: automations (cron in a time zone and one-time, new and
 * existing session targets, pause/resume, run now, invocations, catch-up, tenancy, validation)
 * with a fake clock moved by the test (the scheduler's polling is off: the test ticks it), and
 * session TTL (archive, delete, `expires_at` moved by activity) with the sweeper's clock moved.
 */
describe('automations and session TTL (native API, fake clock)', () => {
  let t: TestApp;
  let invoker: AutomationInvoker;
  let now = new Date('2026-06-01T10:00:30.000Z');
  let idem = 0;
  const key = KEYS.memberA1;

  beforeAll(async () => {
    t = await startTestApp({ AUTOMATION_POLL_MS: '60000', AUTOMATION_CATCHUP_MS: '600000', SESSION_TTL_SWEEP_MS: '3600000', SESSION_TTL_SECONDS: '3600' });
    jest.spyOn(t.app.get(AutomationClock), 'now').mockImplementation(() => now.getTime());
    invoker = t.app.get(AutomationInvoker);
  });
  afterAll(async () => {
    await t.close();
  });

  const createAutomation = (body: unknown, k: string = key) => t.call(k, 'POST', '/v1/automations', body, { 'idempotency-key': `auto-${++idem}` });
  const invocations = async (id: string, k: string = key) => (await t.call(k, 'GET', `/v1/automations/${id}/invocations?order=asc`)).body.data as any[];
  const at = (iso: string) => {
    now = new Date(iso);
  };
  const cron = (expression: string, timezone = 'UTC') => ({ type: 'cron', expression, timezone });
  const newSession = { type: 'new_session', agent_id: 'assistant' };

  it('rejects bad input with the contract envelope (field names), and needs an Idempotency-Key', async () => {
    const valid = { name: 'n', schedule: cron('* * * * *'), target: newSession, input: userInput('hi') };
    const noKey = await t.call(key, 'POST', '/v1/automations', valid);
    expect(noKey.status).toBe(400);
    expect(noKey.body.error.code).toBe('idempotency_key_required');
    const cases: Array<[unknown, string]> = [
      [{ ...valid, schedule: cron('* * *') }, 'schedule.expression'],
      [{ ...valid, schedule: cron('61 * * * *') }, 'schedule.expression'],
      [{ ...valid, schedule: cron('* * * * *', 'Mars/Olympus') }, 'schedule.timezone'],
      [{ ...valid, schedule: { type: 'once', at: '2026-06-01T09:00:00.000Z' } }, 'schedule.at'],
      [{ ...valid, schedule: { type: 'weekly' } }, 'schedule.type'],
      [{ ...valid, target: { type: 'session' } }, 'target.session_id'],
      [{ ...valid, status: 'active' }, 'status'],
      [{ ...valid, input: { role: 'user', content: [] } }, 'input.content'],
    ];
    for (const [body, field] of cases) {
      const r = await createAutomation(body);
      expect({ field, status: r.status, code: r.body.error?.code }).toEqual({ field, status: 400, code: 'invalid_request' });
      expect(r.body.error.details.errors.map((e: any) => e.field)).toContain(field);
      expect(r.headers.get('x-request-id')).toBeTruthy();
    }
    expect((await createAutomation({ ...valid, target: { type: 'new_session', agent_id: 'nobody_here' } })).body.error.code).toBe('agent_not_found');
    const foreign = await createSession(t, KEYS.memberA2, { agent_id: 'assistant' });
    expect((await createAutomation({ ...valid, target: { type: 'session', session_id: foreign } })).body.error.code).toBe('session_not_found');
  });

  it('tenancy: members their own, admins the tenant, other tenants nothing (404 as for a missing id)', async () => {
    const a = await createAutomation({ name: 'mine', schedule: cron('0 9 * * *', 'Europe/Berlin'), target: newSession, input: userInput('hi') });
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({ object: 'automation', enabled: true, status: 'active', subject_id: 'user_a1', created_by: { type: 'developer' }, last_invocation: null });
    expect(a.body.id).toMatch(/^auto_/);
    // 09:00 in Berlin (CEST, UTC+2) on the next day.
    expect(a.body.next_run_at).toBe('2026-06-02T07:00:00.000Z');
    const id = a.body.id;
    expect((await t.call(KEYS.adminA, 'GET', `/v1/automations/${id}`)).status).toBe(200);
    expect((await t.call(KEYS.adminA, 'GET', '/v1/automations')).body.data.map((x: any) => x.id)).toContain(id);
    for (const other of [KEYS.memberA2, KEYS.adminB, KEYS.memberB]) {
      const r = await t.call(other, 'GET', `/v1/automations/${id}`);
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe('automation_not_found');
      expect((await t.call(other, 'POST', `/v1/automations/${id}/pause`)).status).toBe(404);
      expect((await t.call(other, 'GET', `/v1/automations/${id}/invocations`)).status).toBe(404);
      expect((await t.call(other, 'DELETE', `/v1/automations/${id}`)).status).toBe(404);
      expect((await t.call(other, 'GET', '/v1/automations')).body.data.map((x: any) => x.id)).not.toContain(id);
    }
    expect((await t.call(KEYS.adminA, 'POST', `/v1/automations/${id}/pause`)).body.status).toBe('paused');
    expect((await t.call(key, 'DELETE', `/v1/automations/${id}`)).status).toBe(204);
    expect((await t.call(key, 'GET', `/v1/automations/${id}`)).status).toBe(404);
  });

  it('cron every minute: each slot fires exactly once, missed slots are caught up once, pause and resume', async () => {
    at('2026-06-01T10:00:30.000Z');
    const a = await createAutomation({ name: 'every minute', schedule: cron('* * * * *'), target: newSession, input: userInput('tick') });
    const id = a.body.id;
    expect(a.body.next_run_at).toBe('2026-06-01T10:01:00.000Z');
    at('2026-06-01T10:00:59.999Z');
    await invoker.tick();
    expect(await invocations(id)).toEqual([]);

    at('2026-06-01T10:01:00.400Z');
    await Promise.all([invoker.tick(), invoker.tick(), invoker.deliver('ainv_none')]);
    await invoker.tick();
    let list = await invocations(id);
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ source: 'schedule', scheduled_for: '2026-06-01T10:01:00.000Z', status: 'started', error: null });
    const run = await waitForRun(t, key, list[0].run_id, isTerminal);
    expect(run.status).toBe('completed');
    expect(run.session_id).toBe(list[0].session_id);
    const got = await t.call(key, 'GET', `/v1/automations/${id}`);
    expect(got.body.next_run_at).toBe('2026-06-01T10:02:00.000Z');
    expect(got.body.last_invocation.id).toBe(list[0].id);

    // Every node down from 10:02 to 10:05:30: the newest slot (10:05) fires once, 10:02-10:04 are one skipped record.
    at('2026-06-01T10:05:30.000Z');
    await invoker.tick();
    await invoker.tick();
    list = await invocations(id);
    expect(list.map((i) => [i.scheduled_for, i.status, i.skip_reason])).toEqual([
      ['2026-06-01T10:01:00.000Z', 'started', null],
      ['2026-06-01T10:02:00.000Z', 'skipped', 'missed'],
      ['2026-06-01T10:05:00.000Z', 'started', null],
    ]);
    expect(new Set(list.filter((i) => i.status === 'started').map((i) => i.session_id)).size).toBe(2);

    const paused = await t.call(key, 'POST', `/v1/automations/${id}/pause`);
    expect(paused.body).toMatchObject({ status: 'paused', enabled: false, next_run_at: null });
    at('2026-06-01T10:08:10.000Z');
    await invoker.tick();
    expect(await invocations(id)).toHaveLength(3);
    const resumed = await t.call(key, 'POST', `/v1/automations/${id}/resume`);
    expect(resumed.body).toMatchObject({ status: 'active', next_run_at: '2026-06-01T10:09:00.000Z' });
    await t.call(key, 'POST', `/v1/automations/${id}/pause`);
  });

  it('one-time: fires once and completes; a slot older than AUTOMATION_CATCHUP_MS is skipped; resume then needs a future time', async () => {
    at('2026-06-01T11:00:00.000Z');
    const session = await createSession(t, key, { agent_id: 'assistant' });
    const once = await createAutomation({ name: 'once', schedule: { type: 'once', at: '2026-06-01T11:05:00.000Z' }, target: { type: 'session', session_id: session }, input: userInput('follow up') });
    expect(once.body.next_run_at).toBe('2026-06-01T11:05:00.000Z');
    at('2026-06-01T11:05:01.000Z');
    await invoker.tick();
    const [inv] = await invocations(once.body.id);
    expect(inv).toMatchObject({ status: 'started', session_id: session, scheduled_for: '2026-06-01T11:05:00.000Z' });
    await waitForRun(t, key, inv.run_id, isTerminal);
    expect((await t.call(key, 'GET', `/v1/automations/${once.body.id}`)).body).toMatchObject({ status: 'completed', next_run_at: null });
    const resume = await t.call(key, 'POST', `/v1/automations/${once.body.id}/resume`);
    expect(resume.status).toBe(400);
    expect(resume.body.error.code).toBe('invalid_request');

    const late = await createAutomation({ name: 'late', schedule: { type: 'once', at: '2026-06-01T11:10:00.000Z' }, target: newSession, input: userInput('late') });
    at('2026-06-01T11:30:00.000Z'); // 20 min later: older than the 10 min catch-up
    await invoker.tick();
    expect((await invocations(late.body.id)).map((i) => [i.status, i.skip_reason, i.run_id])).toEqual([['skipped', 'missed', null]]);
  });

  it('run now: a manual invocation, delivered at once; a refused input is failed with its error code and the webhook automation.invocation_failed', async () => {
    const receiver = await new WebhookReceiver().start();
    const hook = await t.call(KEYS.adminA, 'POST', '/v1/webhooks', { url: receiver.url, events: ['automation.invocation_failed'] });
    expect(hook.status).toBe(201);
    receiver.secret = hook.body.secret;
    at('2026-06-01T12:00:00.000Z');
    const session = await createSession(t, key, { agent_id: 'assistant' });
    const a = await createAutomation({ name: 'manual', schedule: cron('0 0 1 1 *'), target: { type: 'session', session_id: session }, input: userInput('now please'), enabled: false });
    expect(a.body).toMatchObject({ status: 'paused', next_run_at: null });
    const r = await t.call(key, 'POST', `/v1/automations/${a.body.id}/invocations`, undefined);
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ object: 'automation.invocation', source: 'manual', scheduled_for: null, status: 'queued' });
    const started = await waitFor(async () => (await invocations(a.body.id)).find((i) => i.id === r.body.id && i.status !== 'queued'));
    expect(started.status).toBe('started');
    await waitForRun(t, key, started.run_id, isTerminal);

    expect((await t.call(key, 'POST', `/v1/sessions/${session}/archive`, {})).status).toBe(200);
    const again = await t.call(key, 'POST', `/v1/automations/${a.body.id}/invocations`, undefined);
    const failed = await waitFor(async () => (await invocations(a.body.id)).find((i) => i.id === again.body.id && i.status !== 'queued'));
    expect(failed).toMatchObject({ status: 'failed', run_id: null, error: { code: 'session_archived' } });
    const [delivery] = await receiver.waitFor('automation.invocation_failed', failed.id);
    expect(delivery.payload).toMatchObject({
      type: 'automation.invocation_failed',
      tenant_id: 'tenant_a',
      data: { object: { id: failed.id, object: 'automation.invocation', automation_id: a.body.id, status: 'failed', error: { code: 'session_archived' } } },
    });
    // The delivered one only: the started invocation fired no webhook.
    expect(receiver.received.map((r) => r.payload.data.object.id)).toEqual([failed.id]);
    await receiver.stop();
  });

  it('schedule_follow_up: an agent schedules a follow-up in its own session (created_by agent), which fires there', async () => {
    at('2026-06-01T12:30:00.000Z');
    const session = await createSession(t, key, { agent: { model: 'scripted', tools: ['schedule_follow_up'] } });
    const r = await startRun(t, key, session, {
      input: userInput(script([{ tool_calls: [{ name: 'schedule_follow_up', arguments: { at: '2026-06-01T13:00:00.000Z', input: 'Did order O-1001 ship?' } }] }, { text: 'I will check again at 13:00.' }])),
    });
    const run = await waitForRun(t, key, r.body.run_id, isTerminal);
    expect(run.status).toBe('completed');
    const messages = (await t.call(key, 'GET', `/v1/sessions/${session}/messages`)).body.data;
    const call = messages.flatMap((m: any) => m.content).find((p: any) => p.type === 'tool_call' && p.tool_name === 'schedule_follow_up');
    const result = messages.flatMap((m: any) => m.content).find((p: any) => p.type === 'tool_result' && p.tool_call_id === call.tool_call_id);
    expect(result).toMatchObject({ ok: true, result: { status: 'active', next_run_at: '2026-06-01T13:00:00.000Z' } });
    const auto = await t.call(key, 'GET', `/v1/automations/${result.result.automation_id}`);
    expect(auto.body).toMatchObject({
      created_by: { type: 'agent', session_id: session, tool_call_id: call.tool_call_id },
      target: { type: 'session', session_id: session },
      schedule: { type: 'once', at: '2026-06-01T13:00:00.000Z' },
      subject_id: 'user_a1',
      input: { role: 'user', content: [{ type: 'text', text: 'Did order O-1001 ship?' }] },
    });
    at('2026-06-01T13:00:00.500Z');
    await invoker.tick();
    const [inv] = await invocations(auto.body.id);
    expect(inv).toMatchObject({ status: 'started', session_id: session });
    await waitForRun(t, key, inv.run_id, isTerminal);
    // A bad schedule is the tool's failure, shown to the model, not a failed run.
    const bad = await startRun(t, key, session, { input: userInput(script([{ tool_calls: [{ name: 'schedule_follow_up', arguments: { cron: 'whenever', input: 'x' } }] }, { text: 'ok' }])) });
    expect((await waitForRun(t, key, bad.body.run_id, isTerminal)).status).toBe('completed');
    const after = (await t.call(key, 'GET', `/v1/sessions/${session}/messages?order=desc&limit=5`)).body.data.flatMap((m: any) => m.content);
    expect(after.find((p: any) => p.type === 'tool_result' && p.ok === false)?.error).toMatchObject({ code: 'tool_failed' });
  });

  it('session TTL: default from SESSION_TTL_SECONDS, expires_at moved by activity, archive and delete by the sweeper', async () => {
    const sweeper = t.app.get(SessionTtlSweeper);
    const plain = await t.call(key, 'POST', '/v1/sessions', { agent_id: 'assistant' });
    expect(plain.body.ttl).toEqual({ seconds: 3600, strategy: 'archive' });
    expect(Date.parse(plain.body.expires_at) - Date.parse(plain.body.last_active_at)).toBe(3_600_000);
    const never = await t.call(key, 'POST', '/v1/sessions', { agent_id: 'assistant', ttl: null });
    expect(never.body).toMatchObject({ ttl: null, expires_at: null });
    const bad = await t.call(key, 'POST', '/v1/sessions', { agent_id: 'assistant', ttl: { seconds: 0, strategy: 'shred' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.errors.map((e: any) => e.field).sort()).toEqual(['ttl.seconds', 'ttl.strategy']);

    const moving = await t.call(key, 'POST', '/v1/sessions', { agent_id: 'assistant', ttl: { seconds: 600, strategy: 'archive' } });
    const run = await startRun(t, key, moving.body.id, { input: userInput('hello') });
    await waitForRun(t, key, run.body.run_id, isTerminal);
    const after = await t.call(key, 'GET', `/v1/sessions/${moving.body.id}`);
    expect(Date.parse(after.body.expires_at)).toBeGreaterThan(Date.parse(moving.body.expires_at));
    expect(Date.parse(after.body.expires_at) - Date.parse(after.body.last_active_at)).toBe(600_000);

    const archiving = await t.call(key, 'POST', '/v1/sessions', { agent_id: 'assistant', ttl: { seconds: 5, strategy: 'archive' } });
    const deleting = await t.call(key, 'POST', '/v1/sessions', { agent_id: 'assistant', ttl: { seconds: 5, strategy: 'delete' } });
    const drun = await startRun(t, key, deleting.body.id, { input: userInput('hello') });
    await waitForRun(t, key, drun.body.run_id, isTerminal);
    const updated = await t.call(key, 'POST', `/v1/sessions/${plain.body.id}`, { ttl: { seconds: 5, strategy: 'delete' } });
    expect(updated.body.ttl).toEqual({ seconds: 5, strategy: 'delete' });

    // A session past its TTL whose run waits for an approval (an active run) is left alone.
    const busy = await t.call(key, 'POST', '/v1/sessions', { ttl: { seconds: 5, strategy: 'delete' } });
    const busyRun = await startRun(t, key, busy.body.id, { input: userInput('Please help with order O-1001, it has not arrived') });
    await waitForRun(t, key, busyRun.body.run_id, (r) => r.status === 'waiting_for_approval');

    sweeper.now = () => new Date(Date.now() + 2_000); // not yet
    expect(await sweeper.tick()).toEqual({ archived: 0, deleted: 0 });
    sweeper.now = () => new Date(Date.now() + 60_000); // past the 5 s TTLs, not the 600 s or 3600 s ones
    const swept = await sweeper.tick();
    expect(swept).toEqual({ archived: 1, deleted: 2 });
    expect((await t.call(key, 'GET', `/v1/sessions/${archiving.body.id}`)).body.status).toBe('archived');
    expect((await t.call(key, 'GET', `/v1/sessions/${deleting.body.id}`)).status).toBe(404);
    expect((await t.call(key, 'GET', `/v1/runs/${drun.body.run_id}`)).status).toBe(404);
    expect((await t.call(key, 'GET', `/v1/sessions/${plain.body.id}`)).status).toBe(404);
    expect((await t.call(key, 'GET', `/v1/sessions/${moving.body.id}`)).body.status).toBe('active');
    expect((await t.call(key, 'GET', `/v1/sessions/${never.body.id}`)).body.status).toBe('active');
    expect((await t.call(key, 'GET', `/v1/sessions/${busy.body.id}`)).body).toMatchObject({ status: 'active', active_run_id: busyRun.body.run_id });
    expect((await t.call(key, 'GET', `/v1/runs/${busyRun.body.run_id}`)).body.status).toBe('waiting_for_approval');
  });
});

async function waitFor<T>(probe: () => Promise<T | undefined>, ms = 20000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 40));
  }
}
