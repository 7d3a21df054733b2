import { guardedStatement, StatementParams, StatementPart } from './statement';

describe('StatementParams and guardedStatement', () => {
  it('numbers placeholders in the order parts add them', () => {
    const p = new StatementParams();
    expect(p.add('a', 'b')).toEqual(['$1', '$2']);
    expect(p.add(3)).toEqual(['$3']);
    expect(p.values).toEqual(['a', 'b', 3]);
  });

  const guard: StatementPart = (p) => {
    const [id, v] = p.add('run_1', 4);
    return `UPDATE t SET v = v + 1 WHERE id = ${id} AND v = ${v} RETURNING id`;
  };

  it('is the guard alone when nothing rides on it', () => {
    expect(guardedStatement({ guard, riders: [] })).toEqual({ sql: 'UPDATE t SET v = v + 1 WHERE id = $1 AND v = $2 RETURNING id', params: ['run_1', 4] });
  });

  it('gives riders the guard to test and numbers their parameters after the guard', () => {
    const rider = (name: string, value: unknown) => (p: StatementParams, g: { matched: string }) => `${name} AS (UPDATE u SET x = ${p.add(value)[0]} WHERE ${g.matched})`;
    expect(guardedStatement({ guard, riders: [rider('a', 'x'), rider('b', 'y')] })).toEqual({
      sql:
        'WITH guard AS (UPDATE t SET v = v + 1 WHERE id = $1 AND v = $2 RETURNING id), a AS (UPDATE u SET x = $3 WHERE EXISTS (SELECT 1 FROM guard)), ' +
        'b AS (UPDATE u SET x = $4 WHERE EXISTS (SELECT 1 FROM guard)) SELECT id FROM guard',
      params: ['run_1', 4, 'x', 'y'],
    });
  });

  it("numbers a tail's parameters first and places its CTEs and SELECT last", () => {
    const tail = {
      render: (p: StatementParams, g: { matched: string }) => {
        const [n] = p.add(7);
        return { ctes: [`c AS (SELECT ${n}::int AS n WHERE ${g.matched})`], select: '\nSELECT n FROM c' };
      },
    };
    const rider = (p: StatementParams) => `r AS (SELECT ${p.add('z')[0]})`;
    expect(guardedStatement({ guard, riders: [rider], tail })).toEqual({
      sql: 'WITH guard AS (UPDATE t SET v = v + 1 WHERE id = $2 AND v = $3 RETURNING id), r AS (SELECT $4), c AS (SELECT $1::int AS n WHERE EXISTS (SELECT 1 FROM guard))\nSELECT n FROM c',
      params: [7, 'run_1', 4, 'z'],
    });
  });
});
