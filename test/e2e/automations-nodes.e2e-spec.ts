import { CommandBus } from '@nestjs/cqrs';
import { AppConfig } from '../../src/common/config/app-config';
import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { AutomationInvoker } from '../../src/modules/automations/application/automation-invoker';
import { AutomationClock } from '../../src/modules/automations/domain/automation-clock';
import { AutomationRepository } from '../../src/modules/automations/domain/automation.repository';
import { userInput } from '../helpers/runs';
import { createFreshDatabase, KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * CONTRACT section 17, "each scheduled slot fires exactly once across all nodes": 20 automations
 * due in the same second, three schedulers ticking at once, twice. On PostgreSQL the three are
 * three apps (nodes) on one database; on the embedded database (one process owns it) they are
 * three schedulers of one app, racing through the same statements.
 */
describe('automations: each slot fires exactly once across nodes', () => {
  const apps: TestApp[] = [];
  let schedulers: AutomationInvoker[] = [];
  let db: { url: string; drop: () => Promise<void> } | null = null;
  let now = new Date('2026-08-01T10:00:30.000Z');

  beforeAll(async () => {
    db = await createFreshDatabase();
    const env = { AUTOMATION_POLL_MS: '60000', ...(db ? { DATABASE_URL: db.url } : {}) };
    apps.push(await startTestApp(env));
    if (db) {
      apps.push(await startTestApp(env));
      apps.push(await startTestApp(env));
    }
    for (const a of apps) jest.spyOn(a.app.get(AutomationClock), 'now').mockImplementation(() => now.getTime());
    schedulers = apps.map((a) => a.app.get(AutomationInvoker));
    if (!db) {
      const app = apps[0].app;
      const make = () => new AutomationInvoker(app.get(AutomationRepository), app.get(UnitOfWork), app.get(CommandBus), app.get(AutomationClock), app.get(AppConfig));
      schedulers.push(make(), make());
    }
  }, 120_000);
  afterAll(async () => {
    for (const a of apps) await a.close();
    await db?.drop();
  });

  it('20 automations due in the same second, 3 schedulers ticking at once: 20 invocations, 20 runs', async () => {
    const t = apps[0];
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await t.call(KEYS.memberA1, 'POST', '/v1/automations', { name: `n${i}`, schedule: { type: 'cron', expression: '* * * * *', timezone: 'UTC' }, target: { type: 'new_session', agent_id: 'assistant' }, input: userInput(`slot ${i}`) }, { 'idempotency-key': `nodes-${i}` });
      expect(r.status).toBe(201);
      ids.push(r.body.id);
    }
    now = new Date('2026-08-01T10:01:00.100Z');
    await Promise.all(schedulers.map((s) => s.tick()));
    await Promise.all(schedulers.map((s) => s.tick()));
    const runs = new Set<string>();
    for (const id of ids) {
      const list = (await t.call(KEYS.memberA1, 'GET', `/v1/automations/${id}/invocations`)).body.data;
      expect(list.map((i: any) => [i.scheduled_for, i.status])).toEqual([['2026-08-01T10:01:00.000Z', 'started']]);
      runs.add(list[0].run_id);
    }
    expect(runs.size).toBe(20);
    // Every run exists once, in its own new session.
    const sessions = new Set<string>();
    for (const runId of runs) sessions.add((await t.call(KEYS.memberA1, 'GET', `/v1/runs/${runId}`)).body.session_id);
    expect(sessions.size).toBe(20);
  });
});
