import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every inserted run event queues its audit record in the same statement: a statement-level
 * trigger on `run_events` copies the new rows into `audit_outbox` (as `{"run_event": <row>}`, in
 * sequence order), and the outbox drainer maps them to audit records and chains them. Before,
 * the event store's caller inserted the outbox rows with a second statement (one more round trip
 * per event write); now no code path can commit a run event without its audit record.
 */
export class AuditRunEventsTrigger1764497200000 implements MigrationInterface {
  name = 'AuditRunEventsTrigger1764497200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION audit_queue_run_events() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        INSERT INTO audit_outbox (tenant_id, record)
          SELECT n.tenant_id, jsonb_build_object('run_event', to_jsonb(n)) FROM new_rows n ORDER BY n.session_sequence;
        RETURN NULL;
      END
      $fn$`);
    await q.query(`
      CREATE TRIGGER run_events_audit AFTER INSERT ON run_events
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION audit_queue_run_events()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER run_events_audit ON run_events`);
    await q.query(`DROP FUNCTION audit_queue_run_events()`);
  }
}
