import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { RunRepository } from '../../src/modules/runs/domain/run.repository';
import { append, createSession, deltas, insertRun, NO_WORKER } from '../helpers/event-fixtures';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/** RunRepository.findView (GET /v1/runs/{id}) must read exactly what the aggregate path reads. */
describe('RunRepository.findView', () => {
  let t: TestApp;
  let runs: RunRepository;
  let uow: UnitOfWork;

  beforeAll(async () => {
    t = await startTestApp(NO_WORKER);
    runs = t.app.get(RunRepository);
    uow = t.app.get(UnitOfWork);
  });
  afterAll(async () => {
    await t.close();
  });

  async function expectSameAsAggregate(runId: string) {
    const view = await runs.findView(runId);
    const run = await runs.findById(runId);
    expect(view).not.toBeNull();
    expect(view!.run).toEqual(run!.snapshot());
    for (const k of ['createdAt', 'updatedAt', 'queueExpiresAt', 'leaseExpiresAt', 'startedAt', 'finishedAt'] as const) {
      expect(view!.run[k]).toBeInstanceOf(Date);
    }
    return view!;
  }

  it('reads every field (json, text, dates with and without milliseconds, nulls) and the last sequence', async () => {
    const session = await createSession(t, KEYS.memberA1);
    const owner = await insertRun(t, session);
    await uow.manager.query(
      `UPDATE runs SET error = $2::jsonb, metadata = $3::jsonb, state = $4::jsonb, termination_reason = 'max_steps',
              final_message_id = 'msg_final', step_count = 3,
              started_at = '2026-01-02T03:04:05.678Z', finished_at = '2026-01-02T03:04:06Z', cancel_requested_at = NULL
        WHERE id = $1`,
      [
        owner.runId,
        JSON.stringify({ code: 'tool_failed', message: 'quote " backslash \\ newline \n unicode ü 🚀', details: { n: 1.5, list: [1, null, 'x'] } }),
        JSON.stringify({ 'key with space': 'välue', empty: '' }),
        JSON.stringify({ pending: [{ tool_call_id: 'call_1', tool_name: 'lookup', status: 'awaiting_client', arguments: { q: 'x' } }], streaming_message_id: null }),
      ],
    );
    const before = await expectSameAsAggregate(owner.runId);
    expect(before.lastSequence).toBe(0);
    expect(before.run.startedAt!.toISOString()).toBe('2026-01-02T03:04:05.678Z');
    expect(before.run.finishedAt!.toISOString()).toBe('2026-01-02T03:04:06.000Z');
    expect(before.run.error).toEqual({ code: 'tool_failed', message: 'quote " backslash \\ newline \n unicode ü 🚀', details: { n: 1.5, list: [1, null, 'x'] } });

    await append(t, owner, deltas(3));
    expect((await runs.findView(owner.runId))!.lastSequence).toBe(3);
  });

  it('gives the same instants whatever the session time zone', async () => {
    const session = await createSession(t, KEYS.memberA1);
    const owner = await insertRun(t, session);
    await uow.manager.query(`UPDATE runs SET started_at = '2026-03-04T05:06:07.089Z' WHERE id = $1`, [owner.runId]);
    const inKolkata = await uow.run(async (m) => {
      await m.query(`SET LOCAL TIME ZONE 'Asia/Kolkata'`);
      return runs.findView(owner.runId);
    });
    expect(inKolkata!.run.startedAt!.toISOString()).toBe('2026-03-04T05:06:07.089Z');
    expect(inKolkata!.run).toEqual((await runs.findById(owner.runId))!.snapshot());
  });

  it('is null for a missing run', async () => {
    await expect(runs.findView('run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B')).resolves.toBeNull();
  });
});
