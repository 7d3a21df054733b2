import { userInput } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * Issue 48 part 2: automations are capped per tenant and per owner (AUTOMATIONS_MAX_PER_TENANT /
 * AUTOMATIONS_MAX_PER_MEMBER: 409 automation_limit_reached), also under concurrent creates, and a
 * schedule that can never fire is refused (400 naming the field).
 */
describe('automation caps and schedules that never fire (#48)', () => {
  let t: TestApp;
  let idem = 0;

  beforeAll(async () => {
    t = await startTestApp({ AUTOMATIONS_MAX_PER_TENANT: '5', AUTOMATIONS_MAX_PER_MEMBER: '3' });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  const create = (key: string, body: Record<string, unknown> = {}) =>
    t.call(
      key,
      'POST',
      '/v1/automations',
      { name: 'every minute', schedule: { type: 'cron', expression: '* * * * *', timezone: 'UTC' }, target: { type: 'new_session', agent_id: 'assistant' }, input: userInput('tick'), ...body },
      { 'idempotency-key': `cap-${++idem}` },
    );

  it('a member gets at most AUTOMATIONS_MAX_PER_MEMBER, a tenant at most AUTOMATIONS_MAX_PER_TENANT (409 automation_limit_reached); a deleted one frees its place', async () => {
    const mine = [];
    for (let i = 0; i < 3; i++) {
      const r = await create(KEYS.memberA1);
      expect(r.status).toBe(201);
      mine.push(r.body.id);
    }
    const fourth = await create(KEYS.memberA1);
    expect(fourth.status).toBe(409);
    expect(fourth.body.error).toMatchObject({ code: 'automation_limit_reached', type: 'conflict', retryable: false, details: { scope: 'member', limit: 3 } });
    // A paused one counts too.
    expect((await create(KEYS.memberA1, { enabled: false })).status).toBe(409);

    // Another member of the tenant: 2 more reach the tenant's 5.
    expect((await create(KEYS.memberA2)).status).toBe(201);
    expect((await create(KEYS.memberA2)).status).toBe(201);
    const full = await create(KEYS.memberA2);
    expect(full.status).toBe(409);
    expect(full.body.error.details).toEqual({ scope: 'tenant', limit: 5 });
    expect((await create(KEYS.adminA)).body.error.details).toEqual({ scope: 'tenant', limit: 5 });
    // Another tenant is not limited by this one.
    expect((await create(KEYS.memberB)).status).toBe(201);

    expect((await t.call(KEYS.memberA1, 'DELETE', `/v1/automations/${mine[0]}`)).status).toBe(204);
    expect((await create(KEYS.memberA1)).status).toBe(201);
  });

  it('10 concurrent creates of one member: exactly the cap succeeds', async () => {
    // Tenant B has one (above); its member may own 3.
    const results = await Promise.all(Array.from({ length: 10 }, () => create(KEYS.adminB)));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(3);
    expect(statuses.filter((s) => s === 409)).toHaveLength(7);
    const listed = await t.call(KEYS.adminB, 'GET', '/v1/automations?limit=100');
    // The admin sees the tenant's: the member's one and its own 3.
    expect(listed.body.data).toHaveLength(4);
  });

  it.each([
    ['0 0 31 2 *', 'February 31st'],
    ['0 12 31 4,6,9,11 *', 'the 31st of 30-day months'],
  ])('a cron that never fires (%s: %s) is 400 naming schedule.expression', async (expression) => {
    const r = await create(KEYS.memberB, { schedule: { type: 'cron', expression, timezone: 'UTC' } });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_request');
    expect(r.body.error.details.errors).toEqual([{ field: 'schedule.expression', message: 'never fires (no date matches it)' }]);
  });

  it('a once in the past is 400 naming schedule.at; an update to a schedule that never fires is 400 too', async () => {
    const past = await create(KEYS.memberB, { schedule: { type: 'once', at: new Date(Date.now() - 60_000).toISOString() } });
    expect(past.status).toBe(400);
    expect(past.body.error.details.errors.map((e: any) => e.field)).toEqual(['schedule.at']);
    const listed = await t.call(KEYS.memberB, 'GET', '/v1/automations');
    const id = listed.body.data[0].id;
    const patch = await t.call(KEYS.memberB, 'POST', `/v1/automations/${id}`, { schedule: { type: 'cron', expression: '0 0 30 2 *', timezone: 'UTC' } }, { 'idempotency-key': `cap-${++idem}` });
    expect(patch.status).toBe(400);
    expect(patch.body.error.details.errors.map((e: any) => e.field)).toEqual(['schedule.expression']);
  });
});
