import * as pg from 'pg';
import { BackgroundSlices } from './background-slices';
import { DB_PRIORITY_RANK, DbPriority, DbPriorityLevel } from './db-priority';

type Release = (err?: Error | boolean) => void;
type ConnectCallback = (err: Error | undefined, client?: pg.PoolClient, release?: Release) => void;

/** PriorityPool's own option next to pg's: see BackgroundSlices (0: background results are not deferred). */
export interface PriorityPoolConfig extends pg.PoolConfig {
  backgroundSliceUs?: number;
}

/** Marks a client whose `query` already defers background results. */
const SLICED = Symbol('backgroundSliced');

interface Waiter {
  callback: ConnectCallback;
  timer: NodeJS.Timeout | null;
  level: DbPriorityLevel;
  since: number;
}

/** Told of every checkout: how long its caller waited for a free connection (0: at once). */
export type PoolWaitObserver = (level: DbPriorityLevel, seconds: number) => void;

/**
 * A `pg` pool that hands out its connections by priority (DbPriority): when every connection is
 * checked out, the next one to be released goes to the oldest waiting `interactive` caller, then
 * to `run-start`, then to `background`; FIFO within a level. pg-pool alone serves waiters strictly
 * in arrival order, so a request's statements queued behind those of every executing run.
 *
 * It gates `connect()` in front of pg-pool: at most `max` checkouts pass through, so pg-pool's own
 * queue stays empty and the order is decided here. A waiter gives up after
 * `connectionTimeoutMillis` with pg-pool's error, as before.
 *
 * The same order holds for the CPU: the result of a query made at `background` level reaches its
 * caller through BackgroundSlices (after the requests ready in the same turn of the event loop,
 * a bounded slice of background work per turn), unless `backgroundSliceUs` is 0.
 */
export class PriorityPool extends pg.Pool {
  private checkedOut = 0;
  private readonly waiting: Waiter[][] = [[], [], []];
  private readonly limit: number;
  private readonly waitTimeoutMs: number;
  private readonly slices: BackgroundSlices | null;
  /** Set once by the database module (metrics): called on every checkout, so it must be cheap. */
  onWait: PoolWaitObserver | null = null;

  constructor(config?: PriorityPoolConfig) {
    super(config);
    this.limit = config?.max ?? 10;
    this.waitTimeoutMs = config?.connectionTimeoutMillis ?? 0;
    const sliceUs = config?.backgroundSliceUs ?? 0;
    this.slices = sliceUs > 0 ? new BackgroundSlices(sliceUs / 1000) : null;
  }

  /** Callers waiting here for a connection, per level (interactive, run-start, background). */
  get waitingByLevel(): number[] {
    return this.waiting.map((q) => q.length);
  }

  // pg's connect() has a promise and a callback form; both are kept.
  override connect(): Promise<pg.PoolClient>;
  override connect(callback: ConnectCallback): void;
  override connect(callback?: ConnectCallback): Promise<pg.PoolClient> | void {
    if (!callback) {
      return new Promise<pg.PoolClient>((resolve, reject) => this.connect((err, client) => (err ? reject(err) : resolve(client as pg.PoolClient))));
    }
    const level = DbPriority.current();
    const rank = DB_PRIORITY_RANK[level];
    // Served at once only when nobody of the same or a higher level is already waiting.
    if (this.checkedOut < this.limit && this.waiting.slice(0, rank + 1).every((q) => q.length === 0)) {
      this.onWait?.(level, 0);
      this.checkout(callback);
      return;
    }
    const waiter: Waiter = { callback, timer: null, level, since: performance.now() };
    if (this.waitTimeoutMs > 0) {
      waiter.timer = setTimeout(() => {
        const q = this.waiting[rank];
        const i = q.indexOf(waiter);
        if (i >= 0) q.splice(i, 1);
        callback(new Error('timeout exceeded when trying to connect'));
      }, this.waitTimeoutMs);
      waiter.timer.unref();
    }
    this.waiting[rank].push(waiter);
  }

  private checkout(callback: ConnectCallback): void {
    this.checkedOut++;
    super.connect((err: Error | undefined, client: pg.PoolClient | undefined, release: Release) => {
      if (err || !client) {
        this.checkedOut--;
        this.next();
        callback(err ?? new Error('no client'));
        return;
      }
      let returned = false;
      const done: Release = (e) => {
        // pg-pool throws on a second release; the slot is given back only once either way.
        const first = !returned;
        returned = true;
        const r = release(e);
        if (first) {
          this.checkedOut--;
          this.next();
        }
        return r;
      };
      // pg-pool sets client.release per checkout; callers use either it or the callback's third argument.
      client.release = done;
      this.sliceBackgroundResults(client);
      callback(undefined, client, done);
    });
  }

  /** Once per client: a promise-returning query made at `background` level settles within a slice. */
  private sliceBackgroundResults(client: pg.PoolClient): void {
    const slices = this.slices;
    const marked = client as pg.PoolClient & { [SLICED]?: true };
    if (!slices || marked[SLICED]) return;
    marked[SLICED] = true;
    const query = client.query as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = function (this: pg.PoolClient, ...args: unknown[]) {
      const result = query.apply(this, args);
      return DbPriority.current() === 'background' && result instanceof Promise ? slices.settle(result) : result;
    };
  }

  /** A connection came back: the highest-priority waiter gets the slot. */
  private next(): void {
    if (this.checkedOut >= this.limit) return;
    for (const q of this.waiting) {
      const w = q.shift();
      if (w) {
        if (w.timer) clearTimeout(w.timer);
        this.onWait?.(w.level, (performance.now() - w.since) / 1000);
        this.checkout(w.callback);
        return;
      }
    }
  }
}

/** The `pg` module with PriorityPool as its Pool (TypeORM's `driver` option). */
export const priorityPg = { ...pg, Pool: PriorityPool };
