import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { Metrics } from '../../src/common/metrics/metrics';
import { EventNotification, Notifier } from '../../src/modules/events/domain/notifier';
import { EventStore } from '../../src/modules/events/domain/run-event';
import { NatsNotifier } from '../../src/modules/events/infrastructure/nats-notifier';
import { createSession, deltas, insertRun, NO_WORKER } from '../helpers/event-fixtures';
import { NatsServer, startNatsServer } from '../helpers/nats-server';
import { requireNatsServerBinary } from '../helpers/requirements';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

async function waitFor<T>(what: string, fn: () => T | undefined | Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The NATS notifier against a real nats-server (a child process of the test, killed and
 * restarted): an app with NATS_URL is one node; a second NatsNotifier on the same database is
 * "another node".
 */
describe('NatsNotifier (real nats-server)', () => {
  requireNatsServerBinary();
  let nats: NatsServer;
  let t: TestApp;
  let other: NatsNotifier;
  const received: Array<{ n: EventNotification; rowsFound: number }> = [];
  let otherResyncs = 0;

  beforeAll(async () => {
    nats = await startNatsServer();
    t = await startTestApp({ ...NO_WORKER, NATS_URL: nats.url, NATS_DEGRADED_POLL_MS: '100', NATS_SAFETY_POLL_MS: '60000' });
    const store = t.app.get(EventStore);
    other = new NatsNotifier(t.app.get(UnitOfWork), { url: nats.url, subject: 'agent_api.run_events', degradedPollMs: 100, safetyPollMs: 60_000, nodeId: 'other-node' }, new Metrics());
    other.subscribe({
      // What "another node" reads the moment it is told: the rows must be there.
      onEvents: (n) => void store.readRun(n.runId, 0, 1000).then((rows) => received.push({ n, rowsFound: rows.length })),
      onResync: () => otherResyncs++,
    });
    other.onModuleInit();
    await waitFor('both nodes connected', () => (other.state().connected && t.app.get(Notifier).state().connected ? true : undefined));
  });
  afterAll(async () => {
    await other?.onApplicationShutdown();
    await t?.close();
    await nats?.stop();
  });

  it('is the notifier of a node with NATS_URL, and /readyz shows it', async () => {
    expect(t.app.get(Notifier)).toBeInstanceOf(NatsNotifier);
    const res = await t.call(null, 'GET', '/readyz');
    expect(res.status).toBe(200);
    expect(res.body.notifier).toEqual({ ready: true, kind: 'nats', connected: true, degraded: false });
  });

  it('announces to other nodes only after the commit, with the rows readable, and never on rollback', async () => {
    const session = await createSession(t, KEYS.memberA1);
    const run = await insertRun(t, session);
    const uow = t.app.get(UnitOfWork);
    const store = t.app.get(EventStore);
    await uow.run(async () => {
      await store.append(run, deltas(3));
      await sleep(300); // a notification sent before the commit would arrive now
      expect(received.filter((r) => r.n.runId === run.runId)).toEqual([]);
    });
    const got = await waitFor('the notification on the other node', () => received.find((r) => r.n.runId === run.runId));
    expect(got.n).toMatchObject({ sessionId: session.id, runId: run.runId, lastSequence: 3 });
    expect(got.rowsFound).toBe(3);

    const rolledBack = await insertRun(t, session);
    await expect(
      uow.run(async () => {
        await store.append(rolledBack, deltas(2));
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    await sleep(300);
    expect(received.filter((r) => r.n.runId === rolledBack.runId)).toEqual([]);
  });

  it('degrades to polling while NATS is down (ready, reported, counted) and recovers by itself', async () => {
    await nats.kill();
    await waitFor('degraded state', () => (t.app.get(Notifier).state().degraded && other.state().degraded ? true : undefined));
    const ready = await t.call(null, 'GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.notifier).toEqual({ ready: true, kind: 'nats', connected: false, degraded: true });
    const before = otherResyncs;
    await sleep(600);
    // Subscribers are asked to re-read the database about every 100 ms.
    expect(otherResyncs - before).toBeGreaterThanOrEqual(3);
    const metrics = await t.call(null, 'GET', '/metrics');
    expect(metrics.text).toMatch(/^agent_api_notifier_connected\{kind="nats"\} 0$/m);
    expect(Number(/^agent_api_notifier_degraded_polls_total (\d+)$/m.exec(metrics.text)?.[1])).toBeGreaterThan(0);

    // Events written during the outage are still committed (PostgreSQL is the store).
    const session = await createSession(t, KEYS.memberA1);
    const run = await insertRun(t, session);
    await t.app.get(UnitOfWork).run(() => t.app.get(EventStore).append(run, deltas(2)));

    await nats.restart();
    await waitFor('reconnected', () => (t.app.get(Notifier).state().connected && other.state().connected ? true : undefined), 20_000);
    const after = await t.call(null, 'GET', '/metrics');
    expect(after.text).toMatch(/^agent_api_notifier_connected\{kind="nats"\} 1$/m);
    // Cross-node announcements flow again.
    const run2 = await insertRun(t, session);
    await t.app.get(UnitOfWork).run(() => t.app.get(EventStore).append(run2, deltas(1)));
    const got = await waitFor('a notification after the restart', () => received.find((r) => r.n.runId === run2.runId));
    expect(got.rowsFound).toBe(1);
  });
});
