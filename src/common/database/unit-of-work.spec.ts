import { DataSource, EntityManager } from 'typeorm';
import { UnitOfWork } from './unit-of-work';

/** A DataSource stand-in that records which manager ran what and whether a transaction opened. */
function fakeDataSource() {
  const log: string[] = [];
  const poolManager = { name: 'pool' } as unknown as EntityManager;
  const ds = {
    manager: poolManager,
    transaction: async <T>(fn: (m: EntityManager) => Promise<T>): Promise<T> => {
      log.push('BEGIN');
      const txManager = { name: 'tx' } as unknown as EntityManager;
      try {
        const r = await fn(txManager);
        log.push('COMMIT');
        return r;
      } catch (err) {
        log.push('ROLLBACK');
        throw err;
      }
    },
  } as unknown as DataSource;
  return { ds, log, poolManager };
}

const nameOf = (m: EntityManager) => (m as unknown as { name: string }).name;

describe('UnitOfWork', () => {
  it('statement() opens no transaction, runs on the pool manager and runs after-commit hooks once it returned', async () => {
    const { ds, log } = fakeDataSource();
    const uow = new UnitOfWork(ds);
    const result = await uow.statement(async (m) => {
      log.push(`write on ${nameOf(m)}`);
      expect(nameOf(uow.manager)).toBe('pool');
      expect(uow.inTransaction).toBe(false);
      uow.afterCommit(() => {
        log.push('hook');
      });
      log.push('returning');
      return 42;
    });
    expect(result).toBe(42);
    expect(log).toEqual(['write on pool', 'returning', 'hook']);
  });

  it('statement() joins the ambient transaction, whose hooks then wait for its commit', async () => {
    const { ds, log } = fakeDataSource();
    const uow = new UnitOfWork(ds);
    await uow.run(async () => {
      await uow.statement(async (m) => {
        log.push(`write on ${nameOf(m)}`);
        uow.afterCommit(() => {
          log.push('hook');
        });
      });
      log.push('more work');
    });
    expect(log).toEqual(['BEGIN', 'write on tx', 'more work', 'COMMIT', 'hook']);
  });

  it('statement() that throws runs no hook', async () => {
    const { ds, log } = fakeDataSource();
    const uow = new UnitOfWork(ds);
    await expect(
      uow.statement(async () => {
        uow.afterCommit(() => {
          log.push('hook');
        });
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    await new Promise((r) => setImmediate(r));
    expect(log).toEqual([]);
  });

  it('refuses to open a transaction inside statement() (a statement is one statement)', async () => {
    const { ds, log } = fakeDataSource();
    const uow = new UnitOfWork(ds);
    await expect(uow.statement(() => uow.run(async () => 1))).rejects.toThrow('a transaction cannot start inside UnitOfWork.statement()');
    expect(log).toEqual([]);
  });

  it('run() joins an ambient transaction instead of nesting one', async () => {
    const { ds, log } = fakeDataSource();
    const uow = new UnitOfWork(ds);
    await uow.run(async () => {
      await uow.run(async (m) => {
        log.push(`inner on ${nameOf(m)}`);
      });
    });
    expect(log).toEqual(['BEGIN', 'inner on tx', 'COMMIT']);
  });
});
