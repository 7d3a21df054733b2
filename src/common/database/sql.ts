import { EntityManager } from 'typeorm';

/**
 * Runs SQL and returns its rows. TypeORM's postgres driver answers UPDATE/DELETE with
 * `[rows, affectedCount]` but SELECT/INSERT with `rows`; this always gives the rows.
 */
export async function queryRows<T = Record<string, unknown>>(manager: EntityManager, sql: string, params: unknown[] = []): Promise<T[]> {
  const result: unknown = await manager.query(sql, params);
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number') {
    return result[0] as T[];
  }
  return result as T[];
}

