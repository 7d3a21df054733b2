import { DataSource } from 'typeorm';
import { EntitySql } from './entity-sql';

class Thing {
  id!: string;
  meta!: Record<string, unknown> | null;
  count!: number;
  at!: Date;
}

const fakeDataSource = {
  getMetadata: () => ({
    columns: [
      { propertyName: 'id', databaseName: 'id', type: 'text' },
      { propertyName: 'meta', databaseName: 'meta_data', type: 'jsonb' },
      { propertyName: 'count', databaseName: 'item_count', type: 'integer' },
      { propertyName: 'at', databaseName: 'created_at', type: 'timestamptz' },
    ],
  }),
} as unknown as DataSource;

describe('EntitySql', () => {
  const sql = new EntitySql(fakeDataSource, Thing);

  it('selects every column under its property name', () => {
    expect(sql.selectList()).toBe('"id" AS "id", "meta_data" AS "meta", "item_count" AS "count", "created_at" AS "at"');
    expect(sql.columns().filter((c) => c.timestamp).map((c) => c.property)).toEqual(['at']);
  });

  it('inserts the defined properties, JSON columns as jsonb text, undefined ones left to their default', () => {
    expect(sql.insert('things', { id: 'a', meta: { k: [1] }, count: undefined })).toEqual({
      sql: 'INSERT INTO things ("id", "meta_data") VALUES ($1, $2::jsonb)',
      params: ['a', '{"k":[1]}'],
    });
    expect(sql.insert('things', { id: 'b', meta: null, count: 0 }).params).toEqual(['b', null, 0]);
  });

  it('hydrates a raw row as an entity instance', () => {
    const t = sql.hydrate({ id: 'x', meta: {}, count: 2 });
    expect(t).toBeInstanceOf(Thing);
    expect(t).toEqual(Object.assign(new Thing(), { id: 'x', meta: {}, count: 2 }));
  });
});
