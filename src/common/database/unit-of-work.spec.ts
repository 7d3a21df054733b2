import { DataSource, EntityManager } from 'typeorm';
import { BatchWrite, batchStatement, retryOnDeadlock, UnitOfWork } from './unit-of-work';

/** A DataSource stand-in that records which manager ran what and whether a transaction opened. */
function fakeDataSource(fail?: (sql: string) => unknown) {
  const log: string[] = [];
  const managerNamed = (name: string) =>
    ({
      name,
      query: async (sql: string, params: unknown[]) => {
        log.push(`${name}: ${sql} ${JSON.stringify(params)}`);
        const err = fail?.(sql);
        if (err) throw err;
        return [];
      },
    }) as unknown as EntityManager;
  const poolManager = managerNamed('pool');
  const ds = {
    manager: poolManager,
    transaction: async <T>(fn: (m: EntityManager) => Promise<T>): Promise<T> => {
      log.push('BEGIN');
      const txManager = managerNamed('tx');
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

  /** A write of CTE `name` with one parameter, optionally with a condition. */
  const w = (name: string, value: unknown, extra: Partial<BatchWrite> = {}): BatchWrite => ({
    ctes: (p) => `${name} AS (INSERT INTO t VALUES (${p.add(value)[0]}) RETURNING 1)`,
    ...extra,
  });

  it('batchStatement: one WITH, parameters numbered across writes, conditions checked in order (checkFirst ones first)', () => {
    const { sql, params } = batchStatement([w('a', 1, { expect: 'EXISTS (SELECT 1 FROM a)' }), w('b', 2), w('c', 3, { expect: 'EXISTS (SELECT 1 FROM c)', checkFirst: true })]);
    expect(params).toEqual([1, 2, 3]);
    expect(sql).toBe(
      'WITH a AS (INSERT INTO t VALUES ($1) RETURNING 1),\nb AS (INSERT INTO t VALUES ($2) RETURNING 1),\nc AS (INSERT INTO t VALUES ($3) RETURNING 1)\n' +
        "SELECT CASE WHEN NOT (EXISTS (SELECT 1 FROM c)) THEN uow_abort('2') WHEN NOT (EXISTS (SELECT 1 FROM a)) THEN uow_abort('0') ELSE 0 END AS ok",
    );
    expect(batchStatement([w('a', 1)]).sql).toMatch(/\nSELECT 0 AS ok$/);
  });

  it('batch() holds the writes and runs them as ONE statement on the pool when it returns, then the hooks; reads run on their own', async () => {
    const { ds, log } = fakeDataSource();
    const uow = new UnitOfWork(ds);
    const result = await uow.batch(async () => {
      expect(uow.inTransaction).toBe(false);
      await uow.manager.query('SELECT 1', []);
      await uow.write(w('a', 1));
      await uow.batch(async () => uow.write(w('b', 2))); // a nested batch joins
      uow.afterCommit(() => {
        log.push('hook');
      });
      log.push('returning');
      return 'r';
    });
    expect(result).toBe('r');
    expect(log).toEqual([
      'pool: SELECT 1 []',
      'returning',
      'pool: WITH a AS (INSERT INTO t VALUES ($1) RETURNING 1),\nb AS (INSERT INTO t VALUES ($2) RETURNING 1)\nSELECT 0 AS ok [1,2]',
      'hook',
    ]);
  });

  it('batch() writes nothing and runs no hook when its function throws', async () => {
    const { ds, log } = fakeDataSource();
    const uow = new UnitOfWork(ds);
    await expect(
      uow.batch(async () => {
        await uow.write(w('a', 1));
        uow.afterCommit(() => {
          log.push('hook');
        });
        throw new Error('no');
      }),
    ).rejects.toThrow('no');
    expect(log).toEqual([]);
  });

  it('a failed condition (uow_abort, SQLSTATE UW001) throws the error of the write whose condition failed', async () => {
    const abort = Object.assign(new Error('query failed'), { driverError: { code: 'UW001', message: '1' } });
    const { ds } = fakeDataSource(() => abort);
    const uow = new UnitOfWork(ds);
    const busy = new Error('busy');
    const hooks: string[] = [];
    const err = await uow
      .batch(async () => {
        uow.afterCommit(() => {
          hooks.push('hook');
        });
        await uow.write(w('a', 1, { expect: 'true', fail: () => new Error('not this one') }), w('b', 2, { expect: 'false', fail: async () => busy }));
      })
      .catch((e) => e);
    expect(err).toBe(busy);
    expect(hooks).toEqual([]);
    // Any other error is rethrown as it is.
    const other = new Error('connection lost');
    const uow2 = new UnitOfWork(fakeDataSource(() => other).ds);
    await expect(uow2.write(w('a', 1))).rejects.toBe(other);
  });

  it('write() runs at once in a transaction (or on its own outside any unit), and run()/statement() are refused inside a batch', async () => {
    const { ds, log } = fakeDataSource();
    const uow = new UnitOfWork(ds);
    await uow.run(async () => {
      await uow.batch(async () => uow.write(w('a', 1)));
      log.push('after the write');
    });
    await uow.write(w('b', 2));
    expect(log).toEqual([
      'BEGIN',
      'tx: WITH a AS (INSERT INTO t VALUES ($1) RETURNING 1)\nSELECT 0 AS ok [1]',
      'after the write',
      'COMMIT',
      'pool: WITH b AS (INSERT INTO t VALUES ($1) RETURNING 1)\nSELECT 0 AS ok [2]',
    ]);
    await expect(uow.batch(() => uow.run(async () => undefined))).rejects.toThrow('cannot start inside UnitOfWork.batch()');
    await expect(uow.batch(() => uow.statement(async () => undefined))).rejects.toThrow('cannot run inside a batch');
  });

  it('inside a transaction, writes with a condition run under a savepoint: a failed one leaves the transaction usable for fail()', async () => {
    let abort = true;
    const { ds, log } = fakeDataSource((sql) => (abort && sql.startsWith('WITH') ? Object.assign(new Error('query failed'), { driverError: { code: 'UW001', message: '0' } }) : undefined));
    const uow = new UnitOfWork(ds);
    const conflict = new Error('conflict');
    const guarded = w('a', 1, {
      expect: 'false',
      fail: async () => {
        await uow.manager.query('SELECT why', []);
        return conflict;
      },
    });
    await expect(uow.run(() => uow.write(guarded))).rejects.toBe(conflict);
    abort = false;
    await uow.run(() => uow.write(w('b', 2, { expect: 'true' })));
    expect(log.map((l) => l.split(/ \[| undefined$/)[0].replace(/ AS \(.*$/s, ''))).toEqual([
      'BEGIN',
      'tx: SAVEPOINT uow_write',
      'tx: WITH a',
      'tx: ROLLBACK TO SAVEPOINT uow_write',
      'tx: SELECT why',
      'ROLLBACK',
      'BEGIN',
      'tx: SAVEPOINT uow_write',
      'tx: WITH b',
      'tx: RELEASE SAVEPOINT uow_write',
      'COMMIT',
    ]);
  });
});

describe('retryOnDeadlock', () => {
  const deadlock = () => Object.assign(new Error('deadlock detected'), { driverError: { code: '40P01' } });

  it('runs a deadlock victim again and returns its result; each retry is reported', async () => {
    let calls = 0;
    const retries: number[] = [];
    await expect(
      retryOnDeadlock(
        async () => {
          calls++;
          if (calls < 3) throw deadlock();
          return 'ok';
        },
        (attempt) => retries.push(attempt),
      ),
    ).resolves.toBe('ok');
    expect(calls).toBe(3);
    expect(retries).toEqual([1, 2]);
  });

  it('gives up after five attempts and does not retry other errors', async () => {
    let calls = 0;
    await expect(retryOnDeadlock(async () => { calls++; throw deadlock(); })).rejects.toThrow('deadlock detected');
    expect(calls).toBe(5);
    calls = 0;
    await expect(retryOnDeadlock(async () => { calls++; throw Object.assign(new Error('unique'), { code: '23505' }); })).rejects.toThrow('unique');
    expect(calls).toBe(1);
  });
});
