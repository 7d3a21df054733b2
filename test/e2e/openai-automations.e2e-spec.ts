import OpenAI, { BadRequestError, NotFoundError } from 'openai';
import { AutomationInvoker } from '../../src/modules/automations/application/automation-invoker';
import { AutomationClock } from '../../src/modules/automations/domain/automation-clock';
import { isTerminal, waitForRun } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * CONTRACT sections 15 and 17: `client.beta.agents.automations` (and `.invocations`) of the
 * official `openai` SDK 7.55 against the app, with a fake clock the test moves (the scheduler's
 * polling is off: the test ticks it).
 */
describe('automations through the openai SDK (client.beta.agents.automations)', () => {
  let t: TestApp;
  let client: OpenAI;
  let invoker: AutomationInvoker;
  let now = new Date('2026-07-01T08:00:10.000Z');
  const key = KEYS.memberA1;
  const unix = (iso: string) => Math.floor(Date.parse(iso) / 1000);

  beforeAll(async () => {
    t = await startTestApp({ AUTOMATION_POLL_MS: '60000' });
    jest.spyOn(t.app.get(AutomationClock), 'now').mockImplementation(() => now.getTime());
    invoker = t.app.get(AutomationInvoker);
    client = new OpenAI({ baseURL: `${t.url}/openai/v1`, apiKey: key, maxRetries: 0 });
  });
  afterAll(async () => {
    await t.close();
  });

  const automations = () => client.beta.agents.automations;
  const newSessionTarget = (text: string) => ({
    type: 'new_session' as const,
    agent_id: 'assistant',
    environment: { type: 'none' as const },
    input: [{ role: 'user' as const, content: [{ type: 'input_text' as const, text }] }],
  });
  const allInvocations = async (id: string) => {
    const out: any[] = [];
    for await (const i of automations().invocations.list(id, { order: 'asc' })) out.push(i);
    return out;
  };

  it('periodic every minute with a fake clock: one invocation per slot, its session and run created', async () => {
    const a: any = await automations().create({ type: 'periodic', name: 'minutely', expression: '* * * * *', timezone: 'America/New_York', target: newSessionTarget('tick'), metadata: { team: 'ops' } });
    expect(a).toMatchObject({
      object: 'agent.automation',
      type: 'periodic',
      name: 'minutely',
      expression: '* * * * *',
      timezone: 'America/New_York',
      status: 'active',
      metadata: { team: 'ops' },
      created_by: { type: 'developer' },
      target: { type: 'new_session', agent_id: 'assistant', agent: null, environment: { type: 'none' }, vault_ids: [], input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'tick' }] }] },
    });
    expect(a.id).toMatch(/^auto_/);
    expect(a.created_at).toBe(unix('2026-07-01T08:00:10.000Z'));
    expect(await allInvocations(a.id)).toEqual([]);

    now = new Date('2026-07-01T08:01:00.300Z');
    await invoker.tick();
    now = new Date('2026-07-01T08:02:00.300Z');
    await invoker.tick();
    await invoker.tick();
    const list = await allInvocations(a.id);
    expect(list.map((i) => [i.object, i.status, i.scheduled_at, i.source.type])).toEqual([
      ['agent.automation.invocation', 'completed', unix('2026-07-01T08:01:00Z'), 'automation'],
      ['agent.automation.invocation', 'completed', unix('2026-07-01T08:02:00Z'), 'automation'],
    ]);
    expect(list[0].source.automation.id).toBe(a.id);
    expect(list[0].error).toBeNull();
    const session: any = await client.beta.agents.sessions.retrieve(list[0].session_id);
    expect(session.agent.id).toBe('assistant');
    const one = await automations().invocations.retrieve(list[1].id, { automation_id: a.id });
    expect(one.id).toBe(list[1].id);

    const paused = await automations().pause(a.id);
    expect(paused.status).toBe('paused');
    now = new Date('2026-07-01T08:05:00.300Z');
    await invoker.tick();
    expect(await allInvocations(a.id)).toHaveLength(2);
    expect((await automations().resume(a.id)).status).toBe('active');
    const updated: any = await automations().update(a.id, { name: 'renamed', expression: '*/5 * * * *' });
    expect(updated).toMatchObject({ name: 'renamed', expression: '*/5 * * * *', timezone: 'America/New_York' });
    const deleted = await automations().delete(a.id);
    expect(deleted).toEqual({ id: a.id, object: 'agent.automation.deleted', deleted: true });
    await expect(automations().retrieve(a.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('one-time into an existing session, run now, list filtered by session, and validation errors naming the param', async () => {
    now = new Date('2026-07-01T09:00:00.000Z');
    const s: any = await client.beta.agents.sessions.create({ agent_id: 'assistant', environment: { type: 'none' } });
    const once: any = await automations().create({ type: 'once', name: 'later', run_at: unix('2026-07-01T09:30:00Z'), target: { type: 'existing_session', session_id: s.id, instructions: 'check the order' } });
    expect(once).toMatchObject({ type: 'once', run_at: unix('2026-07-01T09:30:00Z'), status: 'active', target: { type: 'existing_session', session_id: s.id, instructions: 'check the order' } });

    const manual: any = await automations().invocations.create(once.id);
    expect(manual).toMatchObject({ object: 'agent.automation.invocation', source: { type: 'manual' }, scheduled_at: null, status: 'queued', automation_id: once.id });
    let delivered: any;
    for (const until = Date.now() + 20000; Date.now() < until; await new Promise((r) => setTimeout(r, 40))) {
      delivered = await automations().invocations.retrieve(manual.id, { automation_id: once.id });
      if (delivered.status !== 'queued') break;
    }
    expect(delivered).toMatchObject({ status: 'completed', session_id: s.id });
    const runs = (await t.call(key, 'GET', `/v1/sessions/${s.id}/runs`)).body.data;
    await waitForRun(t, key, runs[0].id, isTerminal);

    now = new Date('2026-07-01T09:30:01.000Z');
    await invoker.tick();
    expect((await automations().retrieve(once.id)).status).toBe('completed');
    expect((await allInvocations(once.id)).map((i) => i.source.type).sort()).toEqual(['automation', 'manual']);

    const filtered: string[] = [];
    for await (const x of automations().list({ session_id: s.id })) filtered.push(x.id);
    expect(filtered).toEqual([once.id]);

    const bad = async (body: any, param: string) => {
      const err: any = await automations().create(body).catch((e) => e);
      expect(err).toBeInstanceOf(BadRequestError);
      expect({ param, got: err.error?.param ?? err.param }).toEqual({ param, got: param });
    };
    await bad({ type: 'periodic', name: 'x', expression: 'every minute', timezone: 'UTC', target: newSessionTarget('x') }, 'expression');
    await bad({ type: 'periodic', name: 'x', expression: '* * * * *', timezone: 'Nowhere/City', target: newSessionTarget('x') }, 'timezone');
    await bad({ type: 'once', name: 'x', run_at: unix('2026-07-01T08:00:00Z'), target: newSessionTarget('x') }, 'run_at');
    await bad({ type: 'periodic', name: 'x', expression: '* * * * *', timezone: 'UTC', target: { ...newSessionTarget('x'), environment: { type: 'openai_hosted' } } }, 'target.environment');
    await bad({ type: 'periodic', name: 'x', expression: '* * * * *', timezone: 'UTC', target: { ...newSessionTarget('x'), agent_id: undefined, agent: { model: 'scripted' } } }, 'target.agent');

    // Another member of the tenant sees none of it (404 as for a missing id).
    const other = new OpenAI({ baseURL: `${t.url}/openai/v1`, apiKey: KEYS.memberA2, maxRetries: 0 });
    await expect(other.beta.agents.automations.retrieve(once.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(other.beta.agents.automations.invocations.list(once.id)).rejects.toBeInstanceOf(NotFoundError);
  });
});
