import { DbPriority, DbPriorityLevel } from '../../../common/database/db-priority';
import { EventNotification, NotificationListener, Notifier, NotifierState } from '../domain/notifier';
import { EventStore, EventStreamOwner, NewRunEvent, StoredRunEvent } from '../domain/run-event';
import { HUB_FIRST_PAGE_SIZE, HUB_PAGE_SIZE, StreamHub } from './stream-hub';
import { RecentEvents } from './recent-events';

/** In-memory store whose reads can be held open to interleave subscribers and writes. */
class FakeStore extends EventStore {
  rows: StoredRunEvent[] = [];
  reads = 0;
  /** The database priority each read was made at (DbPriority). */
  levels: DbPriorityLevel[] = [];
  hold: Promise<void> | null = null;

  add(n: number): void {
    for (let i = 0; i < n; i++) {
      const seq = this.rows.length + 1;
      this.rows.push({
        id: `evt_${seq}`,
        tenantId: 't',
        subjectId: 's',
        sessionId: 'sess_1',
        runId: 'run_1',
        sequence: seq,
        sessionSequence: seq,
        type: 'message.delta',
        occurredAt: new Date(0),
        data: {},
      });
    }
  }
  append(_o: EventStreamOwner, _e: NewRunEvent[]): Promise<StoredRunEvent[]> {
    throw new Error('not used');
  }
  async readRun(_runId: string, after: number, limit: number): Promise<StoredRunEvent[]> {
    this.reads++;
    this.levels.push(DbPriority.current());
    const snapshot = this.rows.filter((r) => r.sequence > after).slice(0, limit);
    if (this.hold) await this.hold;
    return snapshot;
  }
  async readSession(_id: string, after: number, limit: number): Promise<StoredRunEvent[]> {
    return this.readRun(_id, after, limit);
  }
  async lastSequence(): Promise<number> {
    return this.rows.length;
  }
}

class FakeNotifier extends Notifier {
  protected readonly logger = { error: (m: string) => { throw new Error(m); } };
  listener: NotificationListener | null = null;
  async announce(): Promise<void> {}
  state(): NotifierState {
    return { kind: 'in_process', connected: true, degraded: false };
  }
  override subscribe(l: NotificationListener): () => void {
    this.listener = l;
    return () => (this.listener = null);
  }
  fire(last: number, origin?: string): void {
    const n: EventNotification = { sessionId: 'sess_1', runId: 'run_1', lastSequence: last, lastSessionSequence: last, ...(origin ? { origin } : {}) };
    this.listener?.onEvents(n);
  }
}

const flush = () => new Promise((r) => setImmediate(r));
const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);

function setup() {
  const store = new FakeStore();
  const notifier = new FakeNotifier();
  const hub = new StreamHub(store, notifier);
  hub.onModuleInit();
  const sink = () => {
    const got: number[] = [];
    return { got, deliver: (events: StoredRunEvent[]) => got.push(...events.map((e) => e.sequence)) };
  };
  return { store, notifier, hub, sink };
}

describe('StreamHub', () => {
  it('replays from the cursor, then delivers live events once per notification read', async () => {
    const { store, notifier, hub, sink } = setup();
    store.add(5);
    const a = sink();
    const b = sink();
    hub.subscribe('run', 'run_1', 2, a);
    hub.subscribe('run', 'run_1', 4, b);
    await flush();
    expect(a.got).toEqual([3, 4, 5]);
    expect(b.got).toEqual([5]);
    store.add(3);
    const before = store.reads;
    notifier.fire(8);
    await flush();
    expect(a.got).toEqual(range(3, 8));
    expect(b.got).toEqual(range(5, 8));
    expect(store.reads - before).toBe(1); // one read, shared by both subscribers
  });

  it('a subscriber joining behind the head during a read is replayed first (no gap, no duplicate)', async () => {
    const { store, notifier, hub, sink } = setup();
    store.add(10);
    let release!: () => void;
    store.hold = new Promise<void>((r) => (release = r));
    const late = sink();
    const early = sink();
    hub.subscribe('run', 'run_1', 8, late); // creates the stream, head = 8, read in flight
    await flush();
    hub.subscribe('run', 'run_1', 0, early); // joins behind the head while the read is held
    store.add(2);
    notifier.fire(12);
    store.hold = null;
    release();
    for (let i = 0; i < 10; i++) await flush();
    expect(late.got).toEqual(range(9, 12));
    expect(early.got).toEqual(range(1, 12));
  });

  it('a cursor beyond the data does not hide later events from other subscribers', async () => {
    const { store, notifier, hub, sink } = setup();
    store.add(3);
    const future = sink();
    hub.subscribe('run', 'run_1', 100, future);
    await flush();
    const now = sink();
    hub.subscribe('run', 'run_1', 3, now);
    await flush();
    store.add(2);
    notifier.fire(5);
    await flush();
    expect(now.got).toEqual([4, 5]);
    expect(future.got).toEqual([]);
  });

  it('pages long replays and stops reading for closed subscribers', async () => {
    const { store, hub, sink } = setup();
    store.add(HUB_PAGE_SIZE * 2 + 7);
    const a = sink();
    const sub = hub.subscribe('run', 'run_1', 0, a);
    for (let i = 0; i < 10; i++) await flush();
    expect(a.got).toEqual(range(1, HUB_PAGE_SIZE * 2 + 7));
    sub.close();
    expect(hub.stats()).toEqual({ streams: 0, subscribers: 0 });
  });

  it('gives a joining subscriber a small first page, wherever its cursor is, then full pages', async () => {
    const { store, hub, sink } = setup();
    store.add(HUB_PAGE_SIZE * 3);
    for (const cursor of [0, HUB_PAGE_SIZE * 2]) {
      const pages: number[][] = [];
      const sub = hub.subscribe('run', 'run_1', cursor, { deliver: (events) => pages.push(events.map((e) => e.sequence)) });
      for (let i = 0; i < 10; i++) await flush();
      expect(pages[0]).toEqual(range(cursor + 1, cursor + HUB_FIRST_PAGE_SIZE));
      expect(pages[1]?.length).toBe(Math.min(HUB_PAGE_SIZE, HUB_PAGE_SIZE * 3 - cursor - HUB_FIRST_PAGE_SIZE));
      expect(pages.flat()).toEqual(range(cursor + 1, HUB_PAGE_SIZE * 3));
      sub.close();
    }
    // A subscriber joining a stream that is already live is caught up the same way.
    const live = sink();
    hub.subscribe('run', 'run_1', HUB_PAGE_SIZE * 3, live);
    const pages: number[][] = [];
    hub.subscribe('run', 'run_1', 0, { deliver: (events) => pages.push(events.map((e) => e.sequence)) });
    for (let i = 0; i < 10; i++) await flush();
    expect(pages[0]).toEqual(range(1, HUB_FIRST_PAGE_SIZE));
    expect(pages.flat()).toEqual(range(1, HUB_PAGE_SIZE * 3));
  });

  it('reads at interactive priority even when a background writer (a run, in its after-commit hook) starts the pump', async () => {
    const { store, notifier, hub, sink } = setup();
    const a = sink();
    // The writer's notification reaches the hub before the subscriber's first read has begun.
    hub.reserve('run', 'run_1');
    store.add(3);
    DbPriority.run('background', () => notifier.fire(3));
    hub.subscribe('run', 'run_1', 0, a);
    await flush();
    store.add(2);
    DbPriority.run('background', () => notifier.fire(5));
    await flush();
    expect(a.got).toEqual(range(1, 5));
    expect(store.levels.length).toBeGreaterThan(0);
    expect(store.levels.every((l) => l === 'interactive')).toBe(true);
  });

  it('re-reads every stream on resync (notifications may have been lost)', async () => {
    const { store, notifier, hub, sink } = setup();
    const a = sink();
    hub.subscribe('run', 'run_1', 0, a);
    await flush();
    store.add(2); // committed while the LISTEN connection was down: no notification
    await flush();
    expect(a.got).toEqual([]);
    notifier.listener!.onResync();
    await flush();
    expect(a.got).toEqual([1, 2]);
  });
});

/** A hub with RecentEvents: `commit` is a commit of this node (stored and handed over). */
function setupRecent() {
  const store = new FakeStore();
  const notifier = new FakeNotifier();
  const recent = new RecentEvents();
  const hub = new StreamHub(store, notifier, recent);
  hub.onModuleInit();
  const got: number[] = [];
  const sink = { deliver: (events: StoredRunEvent[]) => got.push(...events.map((e) => e.sequence)) };
  /** A commit on this node: the row is in the store and handed to RecentEvents. */
  const commit = (n: number) => {
    const from = store.rows.length;
    store.add(n);
    recent.add(store.rows.slice(from));
  };
  return { store, notifier, recent, hub, got, sink, commit };
}

describe('StreamHub with RecentEvents (this node\'s commits)', () => {
  it('serves live events this node committed without reading the store, in order, once', async () => {
    const { store, notifier, hub, got, sink, commit } = setupRecent();
    store.add(3);
    hub.subscribe('run', 'run_1', 0, sink);
    await flush();
    expect(got).toEqual([1, 2, 3]);
    const reads = store.reads;
    commit(2);
    await flush();
    commit(3);
    notifier.fire(8); // the database's notification of the same commits comes later
    await flush();
    expect(got).toEqual(range(1, 8));
    expect(store.reads).toBe(reads);
  });

  it('reads the store for events it does not hold (another node) and when they do not reach what was announced', async () => {
    const { store, notifier, hub, got, sink, commit } = setupRecent();
    hub.subscribe('run', 'run_1', 0, sink);
    await flush();
    store.add(2); // written by another node: only its notification arrives
    notifier.fire(2);
    await flush();
    expect(got).toEqual([1, 2]);
    const reads = store.reads;
    commit(1); // 3, ours
    store.add(1); // 4, another node's, announced before ours is read
    notifier.fire(4);
    await flush();
    await flush();
    expect(got).toEqual([1, 2, 3, 4]);
    expect(store.reads).toBeGreaterThan(reads);
  });

  it('skips the notification of a commit it is handed (this origin), even when it arrives first: no read', async () => {
    const { store, notifier, recent, hub, got, sink } = setupRecent();
    store.add(2);
    hub.subscribe('run', 'run_1', 0, sink);
    await flush();
    expect(got).toEqual([1, 2]);
    const reads = store.reads;
    // Committed: the database's notification comes before the writer's after-commit hand-over.
    const from = store.rows.length;
    store.add(3);
    notifier.fire(5, recent.origin);
    await flush();
    expect(got).toEqual([1, 2]);
    recent.add(store.rows.slice(from));
    await flush();
    expect(got).toEqual(range(1, 5));
    expect(store.reads).toBe(reads);
    // Another origin (another node, or this one before it was watching) is read as usual.
    store.add(1);
    notifier.fire(6, 'another-node');
    await flush();
    await flush();
    expect(got).toEqual(range(1, 6));
    expect(store.reads).toBe(reads + 1);
  });

  it('reads the store after a resync even when it holds the events', async () => {
    const { store, notifier, hub, got, sink, commit } = setupRecent();
    hub.subscribe('run', 'run_1', 0, sink);
    await flush();
    commit(2);
    await flush();
    expect(got).toEqual([1, 2]);
    store.add(1); // missed while the LISTEN connection was down
    const reads = store.reads;
    notifier.listener?.onResync();
    await flush();
    expect(got).toEqual([1, 2, 3]);
    expect(store.reads).toBeGreaterThan(reads);
  });
});

describe('StreamHub: a first page read by the caller after reserving the stream', () => {
  function setupReserved() {
    const t = setupRecent();
    /** What the caller reads: the events after `cursor`, at most `limit`. */
    const read = (cursor: number, limit = HUB_FIRST_PAGE_SIZE) => {
      const events = t.store.rows.filter((r) => r.sequence > cursor).slice(0, limit);
      return { events, complete: events.length < limit };
    };
    return { ...t, read };
  }

  it('delivers the page at once and reads nothing more when nothing was committed since', async () => {
    const { store, hub, got, sink, read } = setupReserved();
    store.add(4);
    const reservation = hub.reserve('run', 'run_1');
    const prefetched = read(1);
    hub.subscribe('run', 'run_1', 1, sink, { reservation, prefetched });
    expect(got).toEqual([2, 3, 4]); // synchronously, before any read of the hub's
    await flush();
    expect(store.reads).toBe(0);
  });

  it('misses nothing committed after the page was read and before the subscription (announced meanwhile)', async () => {
    const { store, notifier, hub, got, sink, read } = setupReserved();
    store.add(2);
    const reservation = hub.reserve('run', 'run_1');
    const prefetched = read(0);
    store.add(2); // another node commits 3 and 4 while the request is still checking the owner
    notifier.fire(4);
    await flush();
    expect(got).toEqual([]);
    hub.subscribe('run', 'run_1', 0, sink, { reservation, prefetched });
    await flush();
    await flush();
    expect(got).toEqual([1, 2, 3, 4]);
    // And live events after that, as usual.
    store.add(1);
    notifier.fire(5);
    await flush();
    expect(got).toEqual(range(1, 5));
  });

  it('goes on reading from where a full page stopped', async () => {
    const { store, hub, got, sink, read } = setupReserved();
    store.add(HUB_FIRST_PAGE_SIZE + 5);
    const reservation = hub.reserve('run', 'run_1');
    hub.subscribe('run', 'run_1', 0, sink, { reservation, prefetched: read(0) });
    for (let i = 0; i < 5; i++) await flush();
    expect(got).toEqual(range(1, HUB_FIRST_PAGE_SIZE + 5));
  });

  it('keeps a reserved stream until it is released or subscribed, and forgets it after', async () => {
    const { hub, sink, read } = setupReserved();
    const r = hub.reserve('run', 'run_1');
    expect(hub.stats().streams).toBe(1);
    r.release();
    r.release(); // twice is once
    expect(hub.stats().streams).toBe(0);
    const r2 = hub.reserve('run', 'run_1');
    const sub = hub.subscribe('run', 'run_1', 0, sink, { reservation: r2, prefetched: read(0) });
    expect(hub.stats()).toEqual({ streams: 1, subscribers: 1 });
    r2.release(); // the caller's finally: already released by subscribe
    expect(hub.stats()).toEqual({ streams: 1, subscribers: 1 });
    sub.close();
    expect(hub.stats().streams).toBe(0);
  });
});
