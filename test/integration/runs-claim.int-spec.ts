import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { RunRepository } from '../../src/modules/runs/domain/run.repository';
import { createSession, insertRun, NO_WORKER } from '../helpers/event-fixtures';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/** RunRepository.claimBatch: one statement leases a burst of runs, FIFO per session, never twice. */
describe('RunRepository.claimBatch', () => {
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
