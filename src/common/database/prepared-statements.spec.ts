import { Client } from 'pg';
import { MAX_PREPARED_PER_CONNECTION, PreparedStatementsClient } from './prepared-statements';

describe('PreparedStatementsClient', () => {
  const calls: unknown[][] = [];
  let spy: jest.SpyInstance;
  beforeEach(() => {
    calls.length = 0;
    spy = jest.spyOn(Client.prototype, 'query').mockImplementation(function (this: unknown, ...args: unknown[]) {
      calls.push(args);
      return Promise.resolve({ rows: [] }) as never;
    });
  });
  afterEach(() => spy.mockRestore());

  it('names each parameterised text once per connection and reuses the name', async () => {
    const c = new PreparedStatementsClient();
    await c.query('SELECT $1::int', [1]);
    await c.query('SELECT $1::text', ['a']);
    await c.query('SELECT $1::int', [2]);
    expect(calls).toEqual([[{ name: 'p1', text: 'SELECT $1::int', values: [1] }], [{ name: 'p2', text: 'SELECT $1::text', values: ['a'] }], [{ name: 'p1', text: 'SELECT $1::int', values: [2] }]]);
    // Another connection has its own names.
    const other = new PreparedStatementsClient();
    await other.query('SELECT $1::text', ['b']);
    expect(calls[3]).toEqual([{ name: 'p1', text: 'SELECT $1::text', values: ['b'] }]);
  });

  it('leaves queries without parameters, with callbacks or config objects unchanged', async () => {
    const c = new PreparedStatementsClient();
    const cb = () => undefined;
    await c.query('BEGIN');
    await c.query('SELECT 1', []);
    c.query('SELECT $1', [1], cb as never);
    await c.query({ text: 'SELECT $1', values: [1] });
    expect(calls).toEqual([['BEGIN'], ['SELECT 1', []], ['SELECT $1', [1], cb], [{ text: 'SELECT $1', values: [1] }]]);
  });

  it('runs texts beyond the per-connection limit unnamed', async () => {
    const c = new PreparedStatementsClient();
    for (let i = 0; i <= MAX_PREPARED_PER_CONNECTION; i++) await c.query(`SELECT $1::int + ${i}`, [i]);
    expect(calls[MAX_PREPARED_PER_CONNECTION - 1][0]).toMatchObject({ name: `p${MAX_PREPARED_PER_CONNECTION}` });
    expect(calls[MAX_PREPARED_PER_CONNECTION]).toEqual([`SELECT $1::int + ${MAX_PREPARED_PER_CONNECTION}`, [MAX_PREPARED_PER_CONNECTION]]);
  });
});
