import { AsyncLocalStorage } from 'node:async_hooks';
import { Injectable, Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';

interface TxContext {
  manager: EntityManager;
  afterCommit: Array<() => void | Promise<void>>;
  /** A single autocommitted statement (`statement()`), not a transaction. */
  single: boolean;
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

  constructor(readonly dataSource: DataSource) {}

  /** The current transaction's manager, or the pool's manager outside a transaction. */
  get manager(): EntityManager {
    return this.als.getStore()?.manager ?? this.dataSource.manager;
  }

  get inTransaction(): boolean {
    const ctx = this.als.getStore();
    return ctx !== undefined && !ctx.single;
  }

  /** Runs `fn` in a transaction (joining the ambient one if any); after-commit hooks run once it commits. */
  async run<T>(fn: (manager: EntityManager) => Promise<T>): Promise<T> {
    const existing = this.als.getStore();
    if (existing && !existing.single) return fn(existing.manager);
    if (existing) throw new Error('a transaction cannot start inside UnitOfWork.statement()');
    const ctx: TxContext = { manager: undefined as unknown as EntityManager, afterCommit: [], single: false };
    const result = await this.dataSource.transaction(async (manager) => {
      ctx.manager = manager;
      ctx.afterCommit = [];
      return this.als.run(ctx, () => fn(manager));
    });
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
    if (existing) return fn(existing.manager);
    const ctx: TxContext = { manager: this.dataSource.manager, afterCommit: [], single: true };
    const result = await this.als.run(ctx, () => fn(ctx.manager));
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
