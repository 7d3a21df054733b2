import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Who is waiting for a database connection, in the order they are served when the pool is busy.
 * - `interactive` (the default: requests, and anything not marked): a caller is waiting on it.
 * - `run-start`: a claimed run until `run.started` is committed (a client waits for that event).
 * - `background`: the rest of a run's execution, audit chaining, sweeps.
 * A closed loop of clients keeps the pool busy; without an order, a POST waited behind the
 * queued statements of every executing run (B1: ~36 ms per connection checkout, ~10 per POST).
 */
export type DbPriorityLevel = 'interactive' | 'run-start' | 'background';

export const DB_PRIORITY_RANK: Readonly<Record<DbPriorityLevel, number>> = { interactive: 0, 'run-start': 1, background: 2 };

interface PriorityStore {
  level: DbPriorityLevel;
}

const storage = new AsyncLocalStorage<PriorityStore>();

export const DbPriority = {
  /** The level of the current async context (`interactive` outside any marked context). */
  current(): DbPriorityLevel {
    return storage.getStore()?.level ?? 'interactive';
  },

  /** Runs `fn` at `level`; everything it starts (timers, promises) inherits the level. */
  run<T>(level: DbPriorityLevel, fn: () => T): T {
    return storage.run({ level }, fn);
  },

  /**
   * Lowers the level of the current context and of everything already started in it (they share
   * the store), e.g. a run execution once its start is durable. Never raises it.
   */
  lower(level: DbPriorityLevel): void {
    const store = storage.getStore();
    if (store && DB_PRIORITY_RANK[level] > DB_PRIORITY_RANK[store.level]) store.level = level;
  },
};
