import type { PoolClient, PoolConfig } from 'pg';
import { DataSource } from 'typeorm';
import { DbPriority, DbPriorityLevel } from '../../src/common/database/db-priority';
import { PriorityPool } from '../../src/common/database/priority-pool';
import { NO_WORKER } from '../helpers/event-fixtures';
import { startTestApp, TestApp } from '../helpers/test-app';

/** PriorityPool against the test database: who gets a released connection first. */
describe('PriorityPool', () => {
  let t: TestApp;
  let options: PoolConfig;
  const pools: PriorityPool[] = [];

  beforeAll(async () => {
    t = await startTestApp(NO_WORKER);
    const master = (t.app.get(DataSource).driver as unknown as { master: PriorityPool & { options: PoolConfig } }).master;
    expect(master).toBeInstanceOf(PriorityPool);
    options = master.options;
  });
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end()));
    await t.close();
  });

  function pool(extra: PoolConfig): PriorityPool {
    const p = new PriorityPool({ ...options, ...extra });
    pools.push(p);
    return p;
  }

  /** Asks for a connection at `level`; resolves with the client once it is handed out. */
  function ask(p: PriorityPool, level: DbPriorityLevel, order: string[], name: string): Promise<PoolClient> {
    return DbPriority.run(level, () => p.connect()).then((c) => {
      order.push(name);
      return c;
    });
  }

  it('hands a released connection to interactive waiters first, then run-start, then background, FIFO within a level', async () => {
    const p = pool({ max: 1 });
    const holder = await p.connect();
    const order: string[] = [];
    const waits = [
      ask(p, 'background', order, 'bg1'),
      ask(p, 'interactive', order, 'int1'),
      ask(p, 'run-start', order, 'start1'),
      ask(p, 'background', order, 'bg2'),
      ask(p, 'interactive', order, 'int2'),
    ];
    expect(p.waitingByLevel).toEqual([2, 1, 2]);
    holder.release();
    // Each one runs a statement on its connection and gives it back; the next waiter follows.
    await Promise.all(
      waits.map(async (w) => {
        const c = await w;
        const r = await c.query('SELECT 1 AS one');
        expect(r.rows[0].one).toBe(1);
        c.release();
      }),
    );
    expect(order).toEqual(['int1', 'int2', 'start1', 'bg1', 'bg2']);
    expect(p.waitingByLevel).toEqual([0, 0, 0]);
  });

  it('lets a caller through at once only when nobody of its level or a higher one waits', async () => {
    const p = pool({ max: 2 });
    const a = await p.connect();
    const b = await p.connect();
    const order: string[] = [];
    const bg = ask(p, 'background', order, 'bg');
    b.release();
    // The free slot goes to the waiting background caller, not to a later one of the same level.
    const bgClient = await bg;
    expect(order).toEqual(['bg']);
    const later = ask(p, 'background', order, 'later');
    const int = ask(p, 'interactive', order, 'int');
    a.release();
    (await int).release();
    bgClient.release();
    (await later).release();
    expect(order).toEqual(['bg', 'int', 'later']);
  });

  it('gives a waiter the pool timeout error after connectionTimeoutMillis, and keeps serving the others', async () => {
    const p = pool({ max: 1, connectionTimeoutMillis: 150 });
    const holder = await p.connect();
    const started = Date.now();
    await expect(DbPriority.run('background', () => p.connect())).rejects.toThrow('timeout exceeded when trying to connect');
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(p.waitingByLevel).toEqual([0, 0, 0]);
    holder.release();
    const c = await p.connect();
    expect((await c.query('SELECT 2 AS two')).rows[0].two).toBe(2);
    c.release();
  });

  it('counts a connection given back twice once (the second release still throws, as in pg-pool)', async () => {
    const p = pool({ max: 1 });
    const c = await p.connect();
    c.release();
    expect(() => c.release()).toThrow();
    // Had the slot been freed twice, both of these would pass the gate at once.
    const order: string[] = [];
    const first = await ask(p, 'interactive', order, 'first');
    const second = ask(p, 'interactive', order, 'second');
    await new Promise((r) => setTimeout(r, 50));
    expect(order).toEqual(['first']);
    first.release();
    (await second).release();
    expect(order).toEqual(['first', 'second']);
  });

  it('serves pool.query() through the same gate (pg-pool calls connect)', async () => {
    const p = pool({ max: 1 });
    const holder = await p.connect();
    const order: string[] = [];
    const q = DbPriority.run('background', () => p.query('SELECT 3 AS three')).then((r) => {
      order.push('query');
      return r;
    });
    const int = ask(p, 'interactive', order, 'int');
    holder.release();
    (await int).release();
    expect((await q).rows[0].three).toBe(3);
    expect(order).toEqual(['int', 'query']);
  });

  it('with backgroundSliceUs, a background query answers through a slice (same rows, same errors, its context kept); 0 wraps nothing', async () => {
    const p = pool({ max: 1, backgroundSliceUs: 500 } as PoolConfig);
    const c = await p.connect();
    expect(Object.getOwnPropertySymbols(c).map(String)).toContain('Symbol(backgroundSliced)');
    const four = await DbPriority.run('background', async () => {
      const r = await c.query('SELECT 4 AS four');
      expect(DbPriority.current()).toBe('background');
      return r.rows[0].four;
    });
    expect(four).toBe(4);
    await expect(DbPriority.run('background', () => c.query('SELECT nope'))).rejects.toThrow(/column "nope" does not exist/);
    expect((await c.query('SELECT 5 AS five')).rows[0].five).toBe(5);
    c.release();
    const plain = pool({ max: 1, backgroundSliceUs: 0 } as PoolConfig);
    const pc = await plain.connect();
    expect(Object.getOwnPropertySymbols(pc).map(String)).not.toContain('Symbol(backgroundSliced)');
    pc.release();
  });

  it('lowers a context once and never raises it', () => {
    DbPriority.run('run-start', () => {
      DbPriority.lower('interactive');
      expect(DbPriority.current()).toBe('run-start');
      DbPriority.lower('background');
      expect(DbPriority.current()).toBe('background');
    });
    expect(DbPriority.current()).toBe('interactive');
  });
});
