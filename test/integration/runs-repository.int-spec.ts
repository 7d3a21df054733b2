import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { RunRepository } from '../../src/modules/runs/domain/run.repository';
import { append, createSession, deltas, insertRun, NO_WORKER } from '../helpers/event-fixtures';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/** The runs repository's own SQL (plain statements, not the ORM's), against a real database. */
describe('RunRepository', () => {
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

  /** RunRepository.claimBatch: one statement leases a burst of runs, FIFO per session, never twice. */
  describe('claimBatch', () => {
    /** A queued run, created `ageMs` ago, leased by nobody. */
    async function queued(session: { id: string; tenantId: string; subjectId: string }, ageMs: number): Promise<string> {
      const { runId } = await insertRun(t, session, 'queued');
      await uow.manager.query(`UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL, created_at = now() - ($2 || ' milliseconds')::interval WHERE id = $1`, [
        runId,
        String(ageMs),
      ]);
      return runId;
    }

    it('leases the oldest claimable runs, only the first queued run of each session, and returns them oldest first', async () => {
      const a = await createSession(t, KEYS.memberA1);
      const b = await createSession(t, KEYS.memberA2);
      const a1 = await queued(a, 5000);
      const a2 = await queued(a, 4000); // behind a1 in its session: not claimable yet
      const b1 = await queued(b, 4500);
      const b2 = await queued(b, 1000);
      const claimed = await runs.claimBatch('node-x', 30_000, 10);
      expect(claimed.map((r) => r.id)).toEqual([a1, b1]);
      for (const r of claimed) expect(r.snapshot()).toMatchObject({ status: 'queued', leaseOwner: 'node-x' });
      // Leased: nobody else gets them; the runs behind them wait for them to end.
      await expect(runs.claimBatch('node-y', 30_000, 10)).resolves.toEqual([]);
      await uow.manager.query(`UPDATE runs SET status = 'completed' WHERE id = ANY($1::text[])`, [[a1, b1]]);
      const next = await runs.claimBatch('node-y', 30_000, 1);
      expect(next.map((r) => r.id)).toEqual([a2]);
      const rest = await runs.claimBatch('node-y', 30_000, 10);
      expect(rest.map((r) => r.id)).toEqual([b2]);
    });

    it('two nodes claiming at once never get the same run', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) ids.push(await queued(await createSession(t, KEYS.memberA1), 1000 + i));
      const [x, y] = await Promise.all([runs.claimBatch('node-1', 30_000, 8), runs.claimBatch('node-2', 30_000, 8)]);
      const all = [...x, ...y].map((r) => r.id);
      expect(new Set(all).size).toBe(all.length);
      expect(all.sort()).toEqual([...ids].sort());
    });
  });

  /** RunRepository.findView (GET /v1/runs/{id}) must read exactly what the aggregate path reads. */
  describe('findView', () => {
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
});
