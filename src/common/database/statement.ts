/**
 * Building ONE statement out of parts that several modules contribute, with a single owner of the
 * parameter numbering: a part never sees an offset, it asks the statement for placeholders.
 * Parts are infrastructure values (each module renders the SQL of its own tables); domain ports
 * and application code exchange plain data, which the infrastructure turns into parts.
 */

/** The parameters of the statement being built: `add` appends values and gives their placeholders. */
export class StatementParams {
  readonly values: unknown[] = [];

  /** `$n` for each value, numbered after those added so far, in order. */
  add(...values: unknown[]): string[] {
    return values.map((v) => {
      this.values.push(v);
      return `$${this.values.length}`;
    });
  }
}

/** A piece of SQL rendered against the statement's parameters (it adds its own, in order). */
export type StatementPart = (params: StatementParams) => string;

/**
 * The explicit contract of a guarded statement: its first CTE is named `guard`, a data-modifying
 * statement with `RETURNING id` (a run's versioned UPDATE); the other parts ("riders") are CTE
 * definitions that must write only when `guard` returned a row, which they test with `matched`.
 */
export interface Guard {
  /** The CTE's name. */
  readonly name: 'guard';
  /** SQL: true when the guard returned its row. */
  readonly matched: string;
}

const GUARD: Guard = { name: 'guard', matched: 'EXISTS (SELECT 1 FROM guard)' };

/** A CTE definition (`name AS (...)`, or several, comma-separated) that writes only when the guard matched. */
export type GuardedRider = (params: StatementParams, guard: Guard) => string;

/**
 * The end of a guarded statement that another part owns (the event store's append): more CTE
 * definitions after the riders and the final SELECT (with its leading whitespace). Its
 * parameters come first ($1...): it is rendered before the guard.
 */
export interface GuardedTail {
  render(params: StatementParams, guard: Guard): { ctes: string[]; select: string };
}

export interface GuardedStatement {
  /** The guard's statement (data-modifying, `RETURNING id`). */
  guard: StatementPart;
  riders: GuardedRider[];
  tail?: GuardedTail;
  /**
   * More columns of the result (SQL select-list items, e.g. a rider's `RETURNING` read with a
   * subquery): the final SELECT becomes `SELECT t.*, <returning> FROM (<tail SELECT>) t`.
   */
  returning?: string;
}

/**
 * The SQL of a guarded statement and its parameters: the guard alone when nothing rides on it;
 * else `WITH guard AS (...), riders..., tail CTEs... <tail SELECT>` (without a tail the SELECT
 * returns the guard's row). Parameters: the tail's, the guard's, then the riders', in order.
 */
export function guardedStatement(s: GuardedStatement): { sql: string; params: unknown[] } {
  const params = new StatementParams();
  const tail = s.tail?.render(params, GUARD);
  const guard = s.guard(params);
  const riders = s.riders.map((r) => r(params, GUARD));
  if (!tail && riders.length === 0) return { sql: guard, params: params.values };
  const ctes = [`${GUARD.name} AS (${guard})`, ...riders, ...(tail?.ctes ?? [])].join(', ');
  const select = tail ? tail.select : ` SELECT id FROM ${GUARD.name}`;
  return { sql: `WITH ${ctes}${s.returning ? ` SELECT t.*, ${s.returning} FROM (${select}) t` : select}`, params: params.values };
}
