import { FakeClock } from '../../src/common/clock/clock';
import { AppConfig } from '../../src/common/config/app-config';
import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { ApplyToRun } from '../../src/modules/runs/application/apply-to-run';
import { RunRepository } from '../../src/modules/runs/domain/run.repository';
import { RunWaker } from '../../src/modules/runs/worker/run-waker';
import { MessageRepository } from '../../src/modules/sessions/domain/message.repository';
import { createSession, insertRun, NO_WORKER } from '../helpers/event-fixtures';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * Timers (CONTRACT 17) due at the same instant, woken by several "nodes" (RunWakers over the same
 * database) at once: each rings exactly once; a node that claimed due runs and died (kill -9:
 * its claim is never followed by a decision) leaves them due again after the claim's lease, and
 * they still ring once.
 */
describe('RunWaker: due timers ring exactly once across nodes', () => {
  let t: TestApp;
  let uow: UnitOfWork;
  let runs: RunRepository;
  const clock = new FakeClock(Date.parse('2026-06-01T12:00:00Z'));

  beforeAll(async () => {
    t = await startTestApp(NO_WORKER, { clock });
    uow = t.app.get(UnitOfWork);
    runs = t.app.get(RunRepository);
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  /** A run waiting for a `wait` timer due at `due` (its state as the decider saves it). */
  async function timer(session: { id: string; tenantId: string; subjectId: string }, due: number): Promise<string> {
    const { runId } = await insertRun(t, session, 'waiting_for_timer');
    const since = new Date(due - 1000).toISOString();
    const until = new Date(due).toISOString();
    const state = {
      pending: [{ tool_call_id: 'call_w', tool_name: 'wait', arguments: { seconds: 1 }, risk: 'auto', executor: 'server', idempotent: true, status: 'awaiting_timer', attempt: 1 }],
      streaming_message_id: null,
      loop_window: [],
      inputs: [],
      input_call_base: 0,
      pause: { reason: 'timer', since, until, wake_at: until, tool_call_id: 'call_w', details: { requested_until: until, requested_until_ms: due } },
    };
    await uow.manager.query(`UPDATE runs SET state = $2::jsonb, wake_at = $3, started_at = $4, lease_owner = NULL, lease_expires_at = NULL WHERE id = $1`, [
      runId,
      JSON.stringify(state),
      new Date(due),
      new Date(due - 1000),
    ]);
    return runId;
  }

  const node = () => new RunWaker(t.app.get(AppConfig), runs, t.app.get(ApplyToRun), t.app.get(MessageRepository), clock);

  async function rung(ids: string[]): Promise<Map<string, { status: string; resumed: number; completed: number }>> {
    const rows: Array<{ id: string; status: string; resumed: string; completed: string }> = await uow.manager.query(
      `SELECT r.id, r.status,
              (SELECT count(*) FROM run_events e WHERE e.run_id = r.id AND e.type = 'run.resumed') AS resumed,
              (SELECT count(*) FROM run_events e WHERE e.run_id = r.id AND e.type = 'tool.completed') AS completed
         FROM runs r WHERE r.id = ANY($1::text[])`,
      [ids],
    );
    return new Map(rows.map((r) => [r.id, { status: r.status, resumed: Number(r.resumed), completed: Number(r.completed) }]));
  }

  it('200 timers due in the same second, 3 nodes polling at once: every one rings once', async () => {
    const due = clock.now() + 1000;
    const ids: string[] = [];
    for (let s = 0; s < 20; s++) {
      const session = await createSession(t, KEYS.memberA1);
      for (let i = 0; i < 10; i++) ids.push(await timer(session, due));
    }
    const nodes = [node(), node(), node()];
    // Not due yet: nothing happens.
    expect((await Promise.all(nodes.map((n) => n.tick()))).reduce((a, b) => a + b, 0)).toBe(0);
    clock.set(due);
    // One pass per node, at once: each claims batches until none is left; claims never overlap.
    const changed = await Promise.all(nodes.map((n) => n.tick()));
    expect(changed.reduce((a, b) => a + b, 0)).toBe(200);
    const states = await rung(ids);
    expect([...states.values()].filter((s) => s.status !== 'running' || s.resumed !== 1 || s.completed !== 1)).toEqual([]);
    // Polling again rings nothing twice.
    clock.advance(10_000);
    await Promise.all(nodes.map((n) => n.tick()));
    expect([...(await rung(ids)).values()].every((s) => s.resumed === 1 && s.completed === 1)).toBe(true);
    const wake: Array<{ n: string }> = await uow.manager.query(`SELECT count(*) AS n FROM runs WHERE id = ANY($1::text[]) AND wake_at IS NOT NULL`, [ids]);
    expect(Number(wake[0].n)).toBe(0);
  }, 180_000); // 200 runs made and woken on one embedded database: 130 s at load 8

  it('a node that claimed due timers and died (its claim never decided) leaves them to the others after the claim lease: still exactly once', async () => {
    const due = clock.now() + 1000;
    const session = await createSession(t, KEYS.memberA1);
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push(await timer(session, due));
    clock.set(due);
    // The dead node's claim: the due runs' wake_at moves on by the lease; nothing is decided.
    const claimedByDead = await runs.claimDue(clock.date(), 5_000, 20);
    expect(claimedByDead).toHaveLength(20);
    const survivors = [node(), node()];
    await Promise.all(survivors.map((n) => n.tick()));
    let states = await rung(ids);
    expect([...states.values()].filter((s) => s.status === 'running')).toHaveLength(10);
    // The claim lease passes: the others take the dead node's runs.
    clock.advance(5_000);
    await Promise.all(survivors.map((n) => n.tick()));
    states = await rung(ids);
    expect([...states.values()].filter((s) => s.status !== 'running' || s.resumed !== 1 || s.completed !== 1)).toEqual([]);
  });
});
