import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A page of a run's or a session's events, as functions planned once per connection
 * (`plan_cache_mode = force_generic_plan`). As a prepared statement the read was planned on every
 * execution: for a long run PostgreSQL found the custom plan (the `LIMIT` a tiny fraction of the
 * rows it knows this run has) cheaper than the generic one, and kept planning it over every
 * partition of run_events (0.13-0.15 ms a read, bench B5). The generic plan has the same shape
 * (a merge of each partition's (run_id, sequence) index, cut at the limit).
 */
export class RunEventsPageFunctions1764498800000 implements MigrationInterface {
  name = 'RunEventsPageFunctions1764498800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION run_events_page(p_run_id text, p_after integer, p_limit integer) RETURNS SETOF run_events
      LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
      BEGIN
        RETURN QUERY SELECT * FROM run_events WHERE run_id = p_run_id AND sequence > p_after ORDER BY sequence ASC LIMIT p_limit;
      END $$`);
    await q.query(`
      CREATE FUNCTION session_events_page(p_session_id text, p_after bigint, p_limit integer) RETURNS SETOF run_events
      LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
      BEGIN
        RETURN QUERY SELECT * FROM run_events WHERE session_id = p_session_id AND session_sequence > p_after ORDER BY session_sequence ASC LIMIT p_limit;
      END $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION session_events_page(text, bigint, integer)`);
    await q.query(`DROP FUNCTION run_events_page(text, integer, integer)`);
  }
}
