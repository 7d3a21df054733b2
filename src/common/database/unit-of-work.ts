import { AsyncLocalStorage } from 'node:async_hooks';
import { Injectable, Logger } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';

interface TxContext {
  manager: EntityManager;
  afterCommit: Array<() => void | Promise<void>>;
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
    return this.als.getStore() !== undefined;
  }

  /** Runs `fn` in a transaction (joining the ambient one if any); after-commit hooks run once it commits. */
  async run<T>(fn: (manager: EntityManager) => Promise<T>): Promise<T> {
    const existing = this.als.getStore();
    if (existing) return fn(existing.manager);
    const ctx: TxContext = { manager: undefined as unknown as EntityManager, afterCommit: [] };
    const result = await this.dataSource.transaction(async (manager) => {
      ctx.manager = manager;
      ctx.afterCommit = [];
      return this.als.run(ctx, () => fn(manager));
    });
    for (const hook of ctx.afterCommit) {
      try {
        await hook();
      } catch (err) {
        this.logger.error(`after-commit hook failed: ${(err as Error).message}`);
      }
    }
    return result;
  }

  /** Registers `hook` to run after the ambient transaction commits (at once when there is none). */
  afterCommit(hook: () => void | Promise<void>): void {
    const ctx = this.als.getStore();
    if (ctx) ctx.afterCommit.push(hook);
    else void Promise.resolve().then(hook);
  }
}
