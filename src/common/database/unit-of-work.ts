import { AsyncLocalStorage } from 'node:async_hooks';
import { Injectable, Logger, Optional } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { Metrics } from '../metrics/metrics';
import { StatementParams, StatementPart } from './statement';

interface TxContext {
  manager: EntityManager;
  afterCommit: Array<() => void | Promise<void>>;
  /** A single autocommitted statement (`statement()`), not a transaction. */
  single: boolean;
  /** A batch (`batch()`): its writes, run as one statement when it ends. */
  writes?: BatchWrite[];
}

/**
 * A write that can be one of several in a single statement (`UnitOfWork.write`): CTE definitions
 * (`name AS (...)`, comma-separated; names unique in the statement) as a StatementPart (it takes
 * its placeholders from the statement), and optionally a condition over them that must hold once they ran (SQL, no
 * parameters). If it does not, the statement is aborted (none of its writes is kept) and the
 * error `fail()` gives is thrown (it may read the database to describe the conflict).
 */
export interface BatchWrite {
  ctes: StatementPart;
  expect?: string;
  /** Its `expect` is checked before those of the writes without (whose failure it then decides). */
  checkFirst?: boolean;
  fail?: () => Error | Promise<Error>;
}

/** SQLSTATE raised by `uow_abort(reason)` (migration UnitOfWorkAbort): a BatchWrite's `expect` failed. */
export const UOW_ABORT_SQLSTATE = 'UW001';

/** The reason given to `uow_abort` when `err` is the error it raised (TypeORM wraps the driver's error), else null. */
export function uowAbortReason(err: unknown): string | null {
  const cause = ((err as { driverError?: unknown }).driverError ?? err) as { code?: string; message?: string } | null;
  return cause?.code === UOW_ABORT_SQLSTATE ? (cause.message ?? '') : null;
}

/** The SQL of one statement running `writes` (see BatchWrite) and its parameters. */
export function batchStatement(writes: BatchWrite[]): { sql: string; params: unknown[] } {
  const p = new StatementParams();
  const params = p.values;
  const ctes: string[] = [];
  const checks: string[] = [];
  let firsts = 0;
  writes.forEach((w, i) => {
    ctes.push(w.ctes(p));
    // The function is VOLATILE: called only in the branch whose condition failed, never folded.
    const check = `WHEN NOT (${w.expect}) THEN uow_abort('${i}')`;
    if (w.expect) checks.splice(w.checkFirst ? firsts++ : checks.length, 0, check);
  });
  const result = checks.length ? `CASE ${checks.join(' ')} ELSE 0 END` : '0';
  return { sql: `WITH ${ctes.join(',\n')}\nSELECT ${result} AS ok`, params };
}

/**
 * One place where transactions start. Repositories take `uow.manager`, which is the ambient
 * transaction's manager when called inside `run()`, so a command's writes commit together.
 * Rule: a transaction is short and never spans a model call, tool call, sleep or other I/O.
 */
@Injectable()
export class UnitOfWork {
  private readonly logger = new Logger('UnitOfWork');
  private readonly als = new AsyncLocalStorage<TxContext>();

  constructor(
    readonly dataSource: DataSource,
    @Optional() private readonly metrics?: Metrics,
  ) {}

  /** A deadlock victim about to run again: counted and logged (every writer keeps one lock order, so this should not happen). */
  private readonly onDeadlock = (attempt: number, err: unknown): void => {
    this.metrics?.recordDeadlockRetry();
    this.logger.warn({ msg: 'deadlock victim, running again', attempt, error: (err as Error).message });
  };

  /** The current transaction's manager, or the pool's manager outside a transaction. */
  get manager(): EntityManager {
    return this.als.getStore()?.manager ?? this.dataSource.manager;
  }

  /** True inside `run()`, `statement()` or `batch()`: a statement may not stand on its own. */
  get inContext(): boolean {
    return this.als.getStore() !== undefined;
  }

  get inTransaction(): boolean {
    const ctx = this.als.getStore();
    return ctx !== undefined && !ctx.single && !ctx.writes;
  }

  /**
   * Runs `fn` as a batch: its writes (`write()`) are held and run together as ONE statement when
   * it returns, with no BEGIN and COMMIT round trips (a statement is atomic on its own); if `fn`
   * throws, nothing is written. Statements `fn` runs through `manager` are not part of it: they
   * run on their own, before the batch's statement, so inside a batch they are reads. `run()` and
   * `statement()` are refused inside a batch. A batch joins an ambient batch; inside a
   * transaction its writes run at once, in the transaction. After-commit hooks registered in it
   * run once its statement has committed.
   */
  async batch<T>(fn: () => Promise<T>): Promise<T> {
    const existing = this.als.getStore();
    if (existing) return fn();
    const ctx: TxContext = { manager: this.dataSource.manager, afterCommit: [], single: true, writes: [] };
    const result = await this.als.run(ctx, fn);
    const writes = ctx.writes!;
    ctx.writes = [];
    if (writes.length > 0) await this.execute(this.dataSource.manager, writes, false);
    await this.runAfterCommit(ctx);
    return result;
  }

  /**
   * Writes as ONE statement: held for the closing statement inside a batch, else run now (in the
   * ambient transaction or statement if there is one, otherwise on its own).
   */
  async write(...writes: BatchWrite[]): Promise<void> {
    if (writes.length === 0) return;
    const ctx = this.als.getStore();
    if (ctx?.writes) {
      ctx.writes.push(...writes);
      return;
    }
    await this.execute(this.manager, writes, this.inTransaction);
  }

  /**
   * Runs `writes` as one statement. Inside a transaction, writes with a condition run under a
   * savepoint: a failed condition then rolls back only them, and the transaction stays usable
   * (for `fail()`'s reads, and for the caller, as a write that found nothing to do would leave it).
   */
  private async execute(manager: EntityManager, writes: BatchWrite[], inTransaction: boolean): Promise<void> {
    const { sql, params } = batchStatement(writes);
    const savepoint = inTransaction && writes.some((w) => w.expect);
    if (savepoint) await manager.query('SAVEPOINT uow_write');
    try {
      await manager.query(sql, params);
      if (savepoint) await manager.query('RELEASE SAVEPOINT uow_write');
    } catch (err) {
      if (savepoint) await manager.query('ROLLBACK TO SAVEPOINT uow_write');
      const reason = uowAbortReason(err);
      if (reason === null) throw err;
      const failed = writes[Number(reason)];
      throw failed?.fail ? await failed.fail() : new Error(`a batched write's condition failed (${failed?.expect ?? reason})`);
    }
  }

  /** Runs `fn` in a transaction (joining the ambient one if any); after-commit hooks run once it commits. */
  async run<T>(fn: (manager: EntityManager) => Promise<T>): Promise<T> {
    const existing = this.als.getStore();
    if (existing && !existing.single) return fn(existing.manager);
    if (existing) throw new Error(`a transaction cannot start inside UnitOfWork.${existing.writes ? 'batch' : 'statement'}()`);
    const ctx: TxContext = { manager: undefined as unknown as EntityManager, afterCommit: [], single: false };
    const result = await retryOnDeadlock(
      () =>
        this.dataSource.transaction(async (manager) => {
          ctx.manager = manager;
          ctx.afterCommit = [];
          return this.als.run(ctx, () => fn(manager));
        }),
      this.onDeadlock,
    );
    await this.runAfterCommit(ctx);
    return result;
  }

  /**
   * Runs `fn`, which writes with ONE statement: inside a transaction it joins it; otherwise no
   * transaction is opened (the statement commits by itself, without the BEGIN and COMMIT round
   * trips) and the after-commit hooks `fn` registers run once it has returned. A statement is
   * atomic on its own, so this is only for writes that are a single statement.
   */
  async statement<T>(fn: (manager: EntityManager) => Promise<T>): Promise<T> {
    const existing = this.als.getStore();
    if (existing?.writes) throw new Error('UnitOfWork.statement() cannot run inside a batch: use write()');
    if (existing) return fn(existing.manager);
    const ctx: TxContext = { manager: this.dataSource.manager, afterCommit: [], single: true };
    const result = await retryOnDeadlock(() => {
      ctx.afterCommit = [];
      return this.als.run(ctx, () => fn(ctx.manager));
    }, this.onDeadlock);
    await this.runAfterCommit(ctx);
    return result;
  }

  private async runAfterCommit(ctx: TxContext): Promise<void> {
    for (const hook of ctx.afterCommit) {
      try {
        await hook();
      } catch (err) {
        this.logger.error(`after-commit hook failed: ${(err as Error).message}`);
      }
    }
  }

  /** Registers `hook` to run after the ambient transaction commits (at once when there is none). */
  afterCommit(hook: () => void | Promise<void>): void {
    const ctx = this.als.getStore();
    if (ctx) ctx.afterCommit.push(hook);
    else void Promise.resolve().then(hook);
  }
}

const DEADLOCK_ATTEMPTS = 5;

/**
 * PostgreSQL aborts one of two transactions that wait for each other's row locks (40P01). Every
 * writer takes its row locks in one order (session, run, the rest: RunPersistence), so this is
 * a safety net, not a path: the victim rolled back whole, so it runs again, after a short random
 * pause, rather than failing a request or a run; `onRetry` hears of each (a metric and a warning:
 * `agent_api_db_deadlock_retries_total`).
 */
export async function retryOnDeadlock<T>(attempt: () => Promise<T>, onRetry?: (attempt: number, err: unknown) => void): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (err) {
      const code = (err as { code?: string; driverError?: { code?: string } }).code ?? (err as { driverError?: { code?: string } }).driverError?.code;
      if (code !== '40P01' || i >= DEADLOCK_ATTEMPTS) throw err;
      onRetry?.(i, err);
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * i));
    }
  }
}
