import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Run-event audit records waiting to be chained: written in the run event's own transaction (so
 * none is ever lost), moved into `audit_records` in batches under the tenant's chain-head lock.
 */
export class AuditOutbox1764497000000 implements MigrationInterface {
  name = 'AuditOutbox1764497000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE audit_outbox (
        id         bigserial PRIMARY KEY,
        tenant_id  text NOT NULL,
        record     jsonb NOT NULL
      )`);
    await q.query(`CREATE INDEX audit_outbox_tenant ON audit_outbox (tenant_id, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE audit_outbox`);
  }
}
