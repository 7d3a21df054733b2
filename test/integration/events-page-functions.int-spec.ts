import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { EventStore } from '../../src/modules/events/domain/run-event';
import { append, createSession, deltas, insertRun, NO_WORKER } from '../helpers/event-fixtures';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * A page of a run's or a session's events is read through `run_events_page` /
 * `session_events_page` (migration 1764498800000), planned once per connection
 * (`plan_cache_mode = force_generic_plan`, else PostgreSQL re-planned a long run's read over every
 * partition on each execution: bench B5). The pages are exactly the keyset query's, on both
 * databases, for every cursor and limit tried, including past the end and across runs.
 */
describe('event pages through the page functions', () => {
  let t: TestApp;
  let uow: UnitOfWork;
  let store: EventStore;

  beforeAll(async () => {
    t = await startTestApp(NO_WORKER);
    uow = t.app.get(UnitOfWork);
    store = t.app.get(EventStore);
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  it('both functions are declared with force_generic_plan', async () => {
    const rows: Array<{ proname: string; proconfig: string[] | string }> = await uow.manager.query(
      `SELECT proname, proconfig FROM pg_proc WHERE proname IN ('run_events_page', 'session_events_page') ORDER BY proname`,
    );
    expect(rows.map((r) => r.proname)).toEqual(['run_events_page', 'session_events_page']);
    for (const r of rows) expect(String(r.proconfig)).toContain('plan_cache_mode=force_generic_plan');
  });

  it('readRun and readSession return the keyset pages, in order, for every cursor and limit', async () => {
    const session = await createSession(t, KEYS.memberA1);
    const first = await insertRun(t, session, 'completed');
    await append(t, first, deltas(40));
    const second = await insertRun(t, session);
    await append(t, second, deltas(25));
    const keysetRun = (runId: string, after: number, limit: number) =>
      uow.manager.query(`SELECT id FROM run_events WHERE run_id = $1 AND sequence > $2 ORDER BY sequence LIMIT $3`, [runId, after, limit]);
    const keysetSession = (after: number, limit: number) =>
      uow.manager.query(`SELECT id FROM run_events WHERE session_id = $1 AND session_sequence > $2 ORDER BY session_sequence LIMIT $3`, [session.id, after, limit]);
    let pages = 0;
    for (const [runId, n] of [
      [first.runId, 40],
      [second.runId, 25],
    ] as const) {
      for (const after of [0, 1, 7, n - 1, n, n + 5]) {
        for (const limit of [1, 3, 10, 100]) {
          const page = await store.readRun(runId, after, limit);
          expect(page.map((e) => e.id)).toEqual((await keysetRun(runId, after, limit)).map((r: { id: string }) => r.id));
          expect(page.map((e) => e.sequence)).toEqual(Array.from({ length: page.length }, (_, i) => after + 1 + i));
          expect(page.every((e) => e.runId === runId)).toBe(true);
          pages++;
        }
      }
    }
    for (const after of [0, 5, 39, 40, 41, 64, 65, 70]) {
      for (const limit of [1, 4, 30, 100]) {
        const page = await store.readSession(session.id, after, limit);
        expect(page.map((e) => e.id)).toEqual((await keysetSession(after, limit)).map((r: { id: string }) => r.id));
        expect(page.map((e) => e.sessionSequence)).toEqual(Array.from({ length: page.length }, (_, i) => after + 1 + i));
        pages++;
      }
    }
    expect(pages).toBe(2 * 6 * 4 + 8 * 4);
    // The whole session in one page: both runs, the first one's events first.
    const all = await store.readSession(session.id, 0, 1000);
    expect(all).toHaveLength(65);
    expect(all.slice(0, 40).every((e) => e.runId === first.runId) && all.slice(40).every((e) => e.runId === second.runId)).toBe(true);
  });
});
