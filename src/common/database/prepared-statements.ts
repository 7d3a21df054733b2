import { Client, QueryConfig } from 'pg';

/** Distinct statements prepared per connection; further ones run unnamed (parsed each time). */
export const MAX_PREPARED_PER_CONNECTION = 256;

/**
 * A `pg` client that runs every parameterised query as a named prepared statement: PostgreSQL
 * parses and analyses it once per connection and then only binds and executes (the parser was
 * the top frame of PostgreSQL's profile under load: every statement was parsed on every
 * execution). Names are per connection and keyed by the SQL text, so the same text always
 * reuses its statement; texts beyond MAX_PREPARED_PER_CONNECTION run unnamed.
 *
 * Only for a real PostgreSQL: the embedded PGlite serves every socket connection from one
 * backend session, where statement names of different connections would collide.
 */
export class PreparedStatementsClient extends Client {
  private readonly names = new Map<string, string>();

  // pg's query() has many overloads; only (text, values) with values is rewritten.
  override query(...args: unknown[]): never {
    const [text, values, callback] = args;
    if (typeof text === 'string' && Array.isArray(values) && values.length > 0 && callback === undefined) {
      let name = this.names.get(text);
      if (name === undefined && this.names.size < MAX_PREPARED_PER_CONNECTION) {
        name = `p${this.names.size + 1}`;
        this.names.set(text, name);
      }
      if (name !== undefined) {
        const config: QueryConfig = { name, text, values };
        return (super.query as unknown as (c: QueryConfig) => never).call(this, config);
      }
    }
    return (super.query as unknown as (...a: unknown[]) => never).apply(this, args);
  }
}
