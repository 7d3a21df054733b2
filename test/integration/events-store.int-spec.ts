import { DATABASE_TARGET, DatabaseTarget } from '../../src/common/database/database.module';
import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { EventNotification, Notifier } from '../../src/modules/events/domain/notifier';
import { queryRows } from '../../src/common/database/sql';
import { guardedStatement, StatementPart } from '../../src/common/database/statement';
import { EventStore, EventStreamOwner } from '../../src/modules/events/domain/run-event';
import { EventAppendParts } from '../../src/modules/events/infrastructure/event-append-parts';
import { Client } from 'pg';
import { PgNotifier } from '../../src/modules/events/infrastructure/pg-notifier';
import { InProcessNotifier } from '../../src/modules/events/infrastructure/in-process-notifier';
import { append, createSession, deltas, insertRun, NO_WORKER } from '../helpers/event-fixtures';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

async function waitFor<T>(fn: () => T | undefined, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('TypeormEventStore', () => {
  let t: TestApp;
  let store: EventStore;
  let uow: UnitOfWork;
  const notes: EventNotification[] = [];
  let resyncs = 0;

  beforeAll(async () => {
    t = await startTestApp(NO_WORKER);
    store = t.app.get(EventStore);
    uow = t.app.get(UnitOfWork);
    t.app.get(Notifier).subscribe({ onEvents: (n) => notes.push(n), onResync: () => resyncs++ });
  });
  afterAll(async () => {
    await t.close();
  });

  it('assigns gap-free, unique sequences under concurrent appends to one session from several runs', async () => {
    const session = await createSession(t, KEYS.memberA1);
    const runs: EventStreamOwner[] = [];
    for (let i = 0; i < 3; i++) runs.push(await insertRun(t, session));
    const sizes = runs.map((_, r) => Array.from({ length: 8 }, (_, k) => 1 + ((r + k) % 4)));
    await Promise.all(runs.flatMap((run, r) => sizes[r].map((n) => append(t, run, deltas(n)))));

    const total = sizes.flat().reduce((a, b) => a + b, 0);
    const all = await store.readSession(session.id, 0, 1000);
    expect(all.map((e) => e.sessionSequence)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    for (const [r, run] of runs.entries()) {
      const own = await store.readRun(run.runId, 0, 1000);
      const count = sizes[r].reduce((a, b) => a + b, 0);
      expect(own.map((e) => e.sequence)).toEqual(Array.from({ length: count }, (_, i) => i + 1));
      // Within a run, session order == run order (both assigned under the same locks).
      const sessionSeqs = own.map((e) => e.sessionSequence);
      expect([...sessionSeqs].sort((a, b) => a - b)).toEqual(sessionSeqs);
      await expect(store.lastSequence(run.runId)).resolves.toBe(count);
    }
    // Bounded keyset reads.
    const page = await store.readSession(session.id, 5, 3);
    expect(page.map((e) => e.sessionSequence)).toEqual([6, 7, 8]);
    await expect(store.readRun(runs[0].runId, 2, 2)).resolves.toHaveLength(2);
  });

  it('returns the stored rows exactly as they are read back', async () => {
    const session = await createSession(t, KEYS.memberA1);
    const run = await insertRun(t, session);
    const data = { message_id: 'msg_1', content_index: 0, delta: 'quote " backslash \\ brace } comma , unicode é' };
    const [written] = await append(t, run, [{ type: 'message.delta', data }]);
    const [read] = await store.readRun(run.runId, 0, 10);
    expect(read).toEqual(written);
    expect(read.data).toEqual(data);
    expect(written.id).toMatch(/^evt_/);
    expect(written).toMatchObject({ tenantId: 'tenant_a', subjectId: 'user_a1', sessionId: session.id, runId: run.runId, sequence: 1, sessionSequence: 1 });
  });

  it('announces a committed append after commit', async () => {
    const session = await createSession(t, KEYS.memberA1);
    const run = await insertRun(t, session);
    await append(t, run, deltas(3));
    await append(t, run, deltas(2));
    const n = await waitFor(() => notes.find((x) => x.runId === run.runId && x.lastSequence === 5));
    expect(n).toEqual({ sessionId: session.id, runId: run.runId, lastSequence: 5, lastSessionSequence: 5 });
    // A second run of the session: its own sequence, the session's session_sequence.
    const second = await insertRun(t, session);
    await append(t, second, deltas(2));
    const n2 = await waitFor(() => notes.find((x) => x.runId === second.runId));
    expect(n2).toEqual({ sessionId: session.id, runId: second.runId, lastSequence: 2, lastSessionSequence: 7 });
  });

  it("rolls back with the caller's transaction: no rows, no counter change, no notification", async () => {
    const session = await createSession(t, KEYS.memberA1);
    const run = await insertRun(t, session);
    await expect(
      uow.run(async () => {
        await store.append(run, deltas(4));
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    // A committed append on another run afterwards proves notifications do flow.
    const other = await insertRun(t, session);
    await append(t, other, deltas(1));
    await waitFor(() => notes.find((x) => x.runId === other.runId));
    await new Promise((r) => setTimeout(r, 200));
    expect(notes.filter((x) => x.runId === run.runId)).toEqual([]);
    await expect(store.readRun(run.runId, 0, 100)).resolves.toEqual([]);
    await expect(store.lastSequence(run.runId)).resolves.toBe(0);
    // The session counter was rolled back too: the other run's event is session_sequence 1.
    const [e] = await store.readSession(session.id, 0, 10);
    expect(e.sessionSequence).toBe(1);
  });

  it('an append after a guard appends only when the guard statement returns a row, in the same statement', async () => {
    const session = await createSession(t, KEYS.memberA1);
    const run = await insertRun(t, session);
    const parts = t.app.get(EventAppendParts);
    const appendGuarded = (owner: EventStreamOwner, events: ReturnType<typeof deltas>, version: number) =>
      uow.statement(async (m) => {
        const tail = parts.appendAfterGuard(owner, events);
        const guard: StatementPart = (p) => {
          const [id, v] = p.add(owner.runId, version);
          return `UPDATE runs SET version = version + 1 WHERE id = ${id} AND version = ${v} RETURNING id`;
        };
        const { sql, params } = guardedStatement({ guard, riders: [], tail });
        return tail.complete(await queryRows(m, sql, params));
      });
    const stored = await uow.run(() => appendGuarded(run, deltas(2), 1));
    expect(stored?.map((e) => e.sequence)).toEqual([1, 2]);
    await expect(store.readRun(run.runId, 0, 10)).resolves.toHaveLength(2);
    const [{ version }] = await uow.manager.query(`SELECT version FROM runs WHERE id = $1`, [run.runId]);
    expect(version).toBe(2);
    // A stale version: no row from the guard, so no counter moves and no event is written.
    await expect(uow.run(() => appendGuarded(run, deltas(3), 1))).resolves.toBeNull();
    await expect(store.lastSequence(run.runId)).resolves.toBe(2);
    await expect(store.readSession(session.id, 0, 10)).resolves.toHaveLength(2);
    const more = await uow.run(() => appendGuarded(run, deltas(1), 2));
    expect(more?.map((e) => [e.sequence, e.sessionSequence])).toEqual([[3, 3]]);
    const n = await waitFor(() => notes.find((x) => x.runId === run.runId && x.lastSequence === 3));
    expect(n.lastSessionSequence).toBe(3);
  });

  it('an append with no events is a no-op', async () => {
    const session = await createSession(t, KEYS.memberA1);
    const run = await insertRun(t, session);
    await expect(append(t, run, [])).resolves.toEqual([]);
    await expect(store.lastSequence(run.runId)).resolves.toBe(0);
  });

  it('PgNotifier tells another node after the commit (never on rollback) and sends a burst of commits in a few batches', async () => {
    const target = t.app.get<DatabaseTarget>(DATABASE_TARGET);
    if (target.kind !== 'postgres') {
      // The embedded database serves one process: its streams are told in-process, and its socket
      // server does not carry notifications between connections.
      expect(t.app.get(Notifier)).toBeInstanceOf(InProcessNotifier);
      return;
    }
    const sender = new PgNotifier(uow, target.url, { safetyPollMs: 0 });
    const receiver = new PgNotifier(uow, target.url, { safetyPollMs: 0 });
    const got: EventNotification[] = [];
    receiver.subscribe({ onEvents: (n) => got.push(n), onResync: () => undefined });
    const note = (i: number): EventNotification => ({ sessionId: 'ses_pgn', runId: `run_pgn_${i}`, lastSequence: i, lastSessionSequence: i });
    try {
      await sender.onModuleInit();
      await receiver.onModuleInit();
      // The receiver's hello reaches the sender (which sends nothing while nobody else listens).
      await waitFor(() => (sender.hasPeers ? true : undefined));
      // Inside a transaction nothing leaves before the commit.
      await uow.run(async () => {
        await sender.announce(note(1));
        await new Promise((r) => setTimeout(r, 200));
        expect(got).toEqual([]);
      });
      await waitFor(() => (got.length === 1 ? true : undefined));
      expect(got[0]).toEqual(note(1));
      // A rolled-back write announces nothing.
      await expect(
        uow.run(async () => {
          await sender.announce(note(2));
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      // A burst of 300 committed writes (as many executors' statements finishing together).
      await Promise.all(Array.from({ length: 300 }, (_, i) => uow.statement(() => sender.announce(note(100 + i)))));
      await sender.flushed();
      await waitFor(() => (got.length === 301 ? true : undefined));
      expect(got.some((n) => n.runId === 'run_pgn_2')).toBe(false);
      expect(new Set(got.map((n) => n.runId)).size).toBe(301);
      // One statement per batch, not per commit.
      expect(sender.batchesSent).toBeGreaterThanOrEqual(2);
      expect(sender.batchesSent).toBeLessThanOrEqual(10);
    } finally {
      await sender.onApplicationShutdown();
      await receiver.onApplicationShutdown();
    }
  });

  it('PgNotifier sends nothing while no other node listens, starts when one joins and stops when it has gone', async () => {
    const target = t.app.get<DatabaseTarget>(DATABASE_TARGET);
    if (target.kind !== 'postgres') return; // in-process notifier: checked above
    // A database of its own: NOTIFY is per database, and this app's node listens on the test's one.
    const db = `pgn_alone_${process.pid}_${Date.now()}`;
    const admin = new Client({ connectionString: target.url });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${db}`);
    const url = new URL(target.url);
    url.pathname = `/${db}`;
    const alone = new PgNotifier(uow, url.toString(), { safetyPollMs: 0, presenceMs: 100 });
    const other = new PgNotifier(uow, url.toString(), { safetyPollMs: 0, presenceMs: 100 });
    const got: EventNotification[] = [];
    other.subscribe({ onEvents: (n) => got.push(n), onResync: () => undefined });
    const note = (i: number): EventNotification => ({ sessionId: 'ses_alone', runId: `run_alone_${i}`, lastSequence: i, lastSessionSequence: i });
    try {
      await alone.onModuleInit();
      await new Promise((r) => setTimeout(r, 300));
      expect(alone.hasPeers).toBe(false);
      await uow.statement(() => alone.announce(note(1)));
      await alone.flushed();
      expect(alone.batchesSent).toBe(0);
      // Another node connects: its hello makes the first one send (and the answer tells it of the first).
      await other.onModuleInit();
      await waitFor(() => (alone.hasPeers && other.hasPeers ? true : undefined));
      await uow.statement(() => alone.announce(note(2)));
      await waitFor(() => (got.length === 1 ? true : undefined));
      expect(got[0]).toEqual(note(2));
      expect(alone.batchesSent).toBe(1);
      // Still a peer after several presence periods (each says "here" again).
      await new Promise((r) => setTimeout(r, 500));
      expect(alone.hasPeers).toBe(true);
      // The other node stops: three silent presence periods later the first one stops sending.
      await other.onApplicationShutdown();
      await waitFor(() => (alone.hasPeers ? undefined : true));
      await uow.statement(() => alone.announce(note(3)));
      await alone.flushed();
      expect(alone.batchesSent).toBe(1);
    } finally {
      await alone.onApplicationShutdown();
      await other.onApplicationShutdown();
      await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => undefined);
      await admin.end();
    }
  });

  it('PgNotifier asks subscribers to re-read every safetyPollMs (a writer that died between its commit and its send)', async () => {
    const target = t.app.get<DatabaseTarget>(DATABASE_TARGET);
    const notifier = new PgNotifier(uow, target.url, { safetyPollMs: 100 });
    let resynced = 0;
    notifier.subscribe({ onEvents: () => undefined, onResync: () => resynced++ });
    try {
      await notifier.onModuleInit();
      await new Promise((r) => setTimeout(r, 550));
      expect(resynced).toBeGreaterThanOrEqual(3);
    } finally {
      await notifier.onApplicationShutdown();
    }
  });

  it('PgNotifier reconnects after losing its LISTEN connection and asks subscribers to re-read', async () => {
    const target = t.app.get<DatabaseTarget>(DATABASE_TARGET);
    const notifier = new PgNotifier(uow, target.url);
    let resynced = 0;
    notifier.subscribe({ onEvents: () => undefined, onResync: () => resynced++ });
    try {
      await notifier.onModuleInit();
      expect(notifier.connected).toBe(true);
      notifier.simulateConnectionLoss();
      expect(notifier.connected).toBe(false);
      await waitFor(() => (resynced > 0 ? true : undefined));
      expect(notifier.connected).toBe(true);
    } finally {
      await notifier.onApplicationShutdown();
    }
  });
});
