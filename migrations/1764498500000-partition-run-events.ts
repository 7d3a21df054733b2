import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `run_events` becomes a table partitioned by range of `occurred_at` (issue 30), so retention
 * drops whole partitions instead of deleting rows. The existing table is not copied: it is
 * attached as the partition `run_events_legacy` covering everything up to the next midnight (UTC)
 * after its newest row, so every event keeps its id, sequences and time. The service creates the
 * following partitions ahead (events' PartitionMaintainer); `run_events_default` catches a row no
 * partition covers (the service late in creating one), never to lose an append.
 *
 * A partitioned table's unique constraints must contain the partition key: the primary key is
 * (id, occurred_at) and the keyset indexes (run_id, sequence, occurred_at) and
 * (session_id, session_sequence, occurred_at). Sequences stay unique per run and per session
 * because they are taken from `event_streams` under its row lock (the constraints were a second
 * guarantee of that, now per partition).
 */
/** The range partitions of run_events (not the default one), with their bounds (lower null: MINVALUE). */
const PARTITION_BOUNDS = `
  CREATE FUNCTION run_events_partition_bounds() RETURNS TABLE (name text, lower timestamptz, upper timestamptz)
  LANGUAGE sql STABLE SET search_path = public, pg_temp AS $$
    SELECT c.relname::text,
           substring(pg_get_expr(c.relpartbound, c.oid) FROM 'FROM \\(''([^'']+)''\\)')::timestamptz,
           substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \\(''([^'']+)''\\)')::timestamptz
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'run_events'::regclass AND pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT'
  $$`;

/**
 * Creates the partitions after the last one, \`width_days\` each, until one reaches \`until\`;
 * returns how many. Rows the default partition caught in a new range move into it (inserted into
 * the table before it is attached: the audit trigger, on the parent, does not see them again).
 * Serialised across nodes by an advisory lock.
 */
const CREATE_PARTITIONS = `
  CREATE FUNCTION run_events_create_partitions(width_days integer, until timestamptz) RETURNS integer
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $fn$
  DECLARE
    lo timestamptz;
    hi timestamptz;
    part text;
    created integer := 0;
  BEGIN
    IF width_days IS NULL OR width_days < 1 OR width_days > 366 THEN
      RAISE EXCEPTION 'width_days must be 1..366, got %', width_days;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('agent_api.run_events_partitions'));
    SELECT max(b.upper) INTO hi FROM run_events_partition_bounds() b;
    IF hi IS NULL THEN
      hi := date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    END IF;
    WHILE hi < until AND created < 1000 LOOP
      lo := hi;
      hi := lo + make_interval(days => width_days);
      part := 'run_events_p' || to_char(lo AT TIME ZONE 'UTC', 'YYYYMMDD');
      EXECUTE format('CREATE TABLE %I (LIKE run_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', part);
      EXECUTE format('WITH m AS (DELETE FROM run_events_default WHERE occurred_at >= %L AND occurred_at < %L RETURNING *) INSERT INTO %I SELECT * FROM m', lo, hi, part);
      EXECUTE format('ALTER TABLE run_events ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', part, lo, hi);
      created := created + 1;
    END LOOP;
    RETURN created;
  END
  $fn$`;

/**
 * Drops one range partition whose whole range is before \`cutoff\` once every run with events in it
 * finished before \`cutoff\` (never an active run's events), after raising \`purged_through\` of
 * each run and session stream in it to the last sequence it held (older cursors: 410). Returns
 * the number of events dropped, or null when the partition is not (yet) to be dropped.
 */
const DROP_PARTITION = `
  CREATE FUNCTION run_events_drop_partition(part text, cutoff timestamptz) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $fn$
  DECLARE
    hi timestamptz;
    pending boolean;
    dropped bigint;
  BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('agent_api.run_events_partitions'));
    SELECT b.upper INTO hi FROM run_events_partition_bounds() b WHERE b.name = part;
    IF hi IS NULL OR hi > cutoff THEN
      RETURN NULL;
    END IF;
    EXECUTE format(
      'SELECT EXISTS (SELECT 1 FROM (SELECT DISTINCT run_id FROM %I) e
                       WHERE NOT EXISTS (SELECT 1 FROM run_events f WHERE f.run_id = e.run_id AND f.type = ''run.finished'' AND f.occurred_at < $1))',
      part) INTO pending USING cutoff;
    IF pending THEN
      RETURN NULL;
    END IF;
    EXECUTE format(
      'WITH d AS (SELECT run_id AS stream_id, max(sequence)::bigint AS upto, count(*) AS n FROM %I GROUP BY run_id
                  UNION ALL SELECT session_id, max(session_sequence), 0 FROM %I GROUP BY session_id),
            u AS (UPDATE event_streams s SET purged_through = GREATEST(s.purged_through, d.upto) FROM d WHERE s.stream_id = d.stream_id RETURNING 1)
       SELECT COALESCE(sum(n), 0)::bigint FROM d',
      part, part) INTO dropped;
    EXECUTE format('DROP TABLE %I', part);
    RETURN dropped;
  END
  $fn$`;

export class PartitionRunEvents1764498500000 implements MigrationInterface {
  name = 'PartitionRunEvents1764498500000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`LOCK TABLE run_events IN ACCESS EXCLUSIVE MODE`);
    await q.query(`ALTER TABLE run_events RENAME TO run_events_legacy`);
    // Index names are per schema: the parent's take the old names.
    await q.query(`ALTER TABLE run_events_legacy RENAME CONSTRAINT run_events_pkey TO run_events_legacy_pkey`);
    await q.query(`ALTER TABLE run_events_legacy RENAME CONSTRAINT run_events_run_sequence TO run_events_legacy_run_sequence`);
    await q.query(`ALTER TABLE run_events_legacy RENAME CONSTRAINT run_events_session_sequence TO run_events_legacy_session_sequence`);
    await q.query(`ALTER INDEX run_events_finished RENAME TO run_events_legacy_finished`);
    // Its checks take the names the parent's have (a partition's are matched by name; an
    // automatic name may have a suffix, e.g. after a down migration).
    for (const [column, name] of [
      ['sequence', 'run_events_sequence_check'],
      ['session_sequence', 'run_events_session_sequence_check'],
    ]) {
      const [check] = (await q.query(
        `SELECT conname FROM pg_constraint WHERE conrelid = 'run_events_legacy'::regclass AND contype = 'c' AND pg_get_constraintdef(oid) = $1`,
        [`CHECK ((${column} >= 1))`],
      )) as Array<{ conname: string }>;
      if (!check) throw new Error(`run_events has no CHECK (${column} >= 1)`);
      if (check.conname !== name) await q.query(`ALTER TABLE run_events_legacy RENAME CONSTRAINT "${check.conname}" TO ${name}`);
    }
    // The audit trigger moves to the parent (statement triggers fire on the table a statement names).
    await q.query(`DROP TRIGGER run_events_audit ON run_events_legacy`);
    await q.query(`
      CREATE TABLE run_events (
        id                text NOT NULL,
        tenant_id         text NOT NULL,
        subject_id        text NOT NULL,
        session_id        text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        run_id            text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        sequence          integer NOT NULL,
        session_sequence  bigint NOT NULL,
        type              text NOT NULL,
        data              jsonb NOT NULL,
        occurred_at       timestamptz(3) NOT NULL,
        -- Named as on the old table: a partition must have the parent's checks, matched by name.
        CONSTRAINT run_events_sequence_check CHECK (sequence >= 1),
        CONSTRAINT run_events_session_sequence_check CHECK (session_sequence >= 1),
        CONSTRAINT run_events_pkey PRIMARY KEY (id, occurred_at),
        CONSTRAINT run_events_run_sequence UNIQUE (run_id, sequence, occurred_at),
        CONSTRAINT run_events_session_sequence UNIQUE (session_id, session_sequence, occurred_at)
      ) PARTITION BY RANGE (occurred_at)`);
    await q.query(`CREATE INDEX run_events_finished ON run_events (occurred_at) WHERE type = 'run.finished'`);
    // Retention asks, per run of a partition, whether it finished before the cutoff.
    await q.query(`CREATE INDEX run_events_finished_run ON run_events (run_id, occurred_at) WHERE type = 'run.finished'`);
    const [{ upper }] = (await q.query(
      `SELECT to_char(date_trunc('day', GREATEST(now(), COALESCE(max(occurred_at), now())) AT TIME ZONE 'UTC') + interval '1 day', 'YYYY-MM-DD"T"00:00:00"Z"') AS upper
         FROM run_events_legacy`,
    )) as Array<{ upper: string }>;
    // Its own keys give way to the parent's (a partition has one primary key: the parent's),
    // which ATTACH builds on it; all under the lock taken above, in this one transaction.
    await q.query(`ALTER TABLE run_events_legacy DROP CONSTRAINT run_events_legacy_run_sequence`);
    await q.query(`ALTER TABLE run_events_legacy DROP CONSTRAINT run_events_legacy_session_sequence`);
    await q.query(`ALTER TABLE run_events_legacy DROP CONSTRAINT run_events_legacy_pkey`);
    await q.query(`DROP INDEX run_events_legacy_finished`);
    // The bound is checked against the rows once (a scan, no copy).
    await q.query(`ALTER TABLE run_events ATTACH PARTITION run_events_legacy FOR VALUES FROM (MINVALUE) TO ('${upper}')`);
    // Foreign keys: the parent's are cloned onto it (or its matching ones adopted); any other goes.
    for (const fk of (await q.query(
      `SELECT conname FROM pg_constraint WHERE conrelid = 'run_events_legacy'::regclass AND contype = 'f' AND conparentid = 0`,
    )) as Array<{ conname: string }>) {
      await q.query(`ALTER TABLE run_events_legacy DROP CONSTRAINT "${fk.conname}"`);
    }
    await q.query(`CREATE TABLE run_events_default PARTITION OF run_events DEFAULT`);
    await q.query(`
      CREATE TRIGGER run_events_audit AFTER INSERT ON run_events
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION audit_queue_run_events()`);
    await q.query(PARTITION_BOUNDS);
    await q.query(CREATE_PARTITIONS);
    await q.query(DROP_PARTITION);
    // DDL as the schema owner, by a service role that may not run DDL (README: production roles).
    for (const fn of ['run_events_create_partitions(integer, timestamptz)', 'run_events_drop_partition(text, timestamptz)']) {
      await q.query(`REVOKE EXECUTE ON FUNCTION ${fn} FROM PUBLIC`);
      await q.query(`
        DO $$ BEGIN
          IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'agent_api_app') THEN
            GRANT EXECUTE ON FUNCTION ${fn} TO agent_api_app;
          END IF;
        END $$`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION run_events_drop_partition(text, timestamptz)`);
    await q.query(`DROP FUNCTION run_events_create_partitions(integer, timestamptz)`);
    await q.query(`DROP FUNCTION run_events_partition_bounds()`);
    await q.query(`LOCK TABLE run_events IN ACCESS EXCLUSIVE MODE`);
    await q.query(`ALTER TABLE run_events RENAME TO run_events_partitioned`);
    await q.query(`ALTER TABLE run_events_partitioned RENAME CONSTRAINT run_events_pkey TO run_events_partitioned_pkey`);
    await q.query(`ALTER TABLE run_events_partitioned RENAME CONSTRAINT run_events_run_sequence TO run_events_partitioned_run_sequence`);
    await q.query(`ALTER TABLE run_events_partitioned RENAME CONSTRAINT run_events_session_sequence TO run_events_partitioned_session_sequence`);
    await q.query(`ALTER INDEX run_events_finished RENAME TO run_events_partitioned_finished`);
    await q.query(`
      CREATE TABLE run_events (
        id                text PRIMARY KEY,
        tenant_id         text NOT NULL,
        subject_id        text NOT NULL,
        session_id        text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        run_id            text NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        sequence          integer NOT NULL,
        session_sequence  bigint NOT NULL,
        type              text NOT NULL,
        data              jsonb NOT NULL,
        occurred_at       timestamptz(3) NOT NULL,
        CONSTRAINT run_events_sequence_check CHECK (sequence >= 1),
        CONSTRAINT run_events_session_sequence_check CHECK (session_sequence >= 1),
        CONSTRAINT run_events_run_sequence UNIQUE (run_id, sequence),
        CONSTRAINT run_events_session_sequence UNIQUE (session_id, session_sequence)
      )`);
    // Copied before the audit trigger exists on the new table: no event is audited twice.
    await q.query(`INSERT INTO run_events SELECT * FROM run_events_partitioned`);
    await q.query(`DROP TABLE run_events_partitioned`);
    await q.query(`CREATE INDEX run_events_finished ON run_events (occurred_at) WHERE type = 'run.finished'`);
    await q.query(`
      CREATE TRIGGER run_events_audit AFTER INSERT ON run_events
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION audit_queue_run_events()`);
  }
}
