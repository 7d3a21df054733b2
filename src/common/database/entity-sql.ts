import { toJsonb } from './jsonb';
import { DataSource } from 'typeorm';
import { StatementParams, StatementPart } from './statement';

export interface EntityColumn<T> {
  property: keyof T & string;
  /** The quoted column name. */
  column: string;
  json: boolean;
  /** A `timestamptz` column (a JSON row carries it as a string). */
  timestamp: boolean;
}

/**
 * Plain SQL for an entity's row, with the column list taken from its TypeORM metadata: the hot
 * paths (run and session reads and inserts) skip TypeORM's query builders, which were ~20% of
 * the CPU of a request that used them (profile), and keep one source of truth for the columns.
 */
export class EntitySql<T extends object> {
  private cachedColumns: Array<EntityColumn<T>> | null = null;
  private cachedSelect: string | null = null;

  constructor(
    private readonly dataSource: DataSource,
    private readonly entity: new () => T,
  ) {}

  columns(): Array<EntityColumn<T>> {
    this.cachedColumns ??= this.dataSource.getMetadata(this.entity).columns.map((c) => ({
      property: c.propertyName as keyof T & string,
      column: `"${c.databaseName}"`,
      json: c.type === 'jsonb' || c.type === 'json',
      timestamp: c.type === 'timestamptz',
    }));
    return this.cachedColumns;
  }

  /** `"column" AS "property", ...`: rows come back keyed by property. */
  selectList(): string {
    this.cachedSelect ??= this.columns()
      .map((c) => `${c.column} AS "${c.property}"`)
      .join(', ');
    return this.cachedSelect;
  }

  /** An INSERT of the row's defined properties (undefined ones take the column default). */
  insert(table: string, row: Partial<T>): { sql: string; params: unknown[] } {
    const params = new StatementParams();
    return { sql: this.insertPart(table, row)(params), params: params.values };
  }

  /** `insert` as a part of a larger statement (a CTE's body): its parameters from the statement's numbering. */
  insertPart(table: string, row: Partial<T>): StatementPart {
    const values: unknown[] = [];
    const names: string[] = [];
    const casts: string[] = [];
    for (const c of this.columns()) {
      const v = row[c.property];
      if (v === undefined) continue;
      values.push(c.json && v !== null ? toJsonb(v) : v);
      names.push(c.column);
      casts.push(c.json ? '::jsonb' : '');
    }
    const head = `INSERT INTO ${table} (${names.join(', ')}) VALUES (`;
    return (p) => `${head}${p.add(...values).map((ph, i) => `${ph}${casts[i]}`).join(', ')})`;
  }

  /** A raw row (keyed by property, from `selectList`) as an entity instance. */
  hydrate(raw: Record<string, unknown>): T {
    return Object.assign(new this.entity(), raw);
  }
}
