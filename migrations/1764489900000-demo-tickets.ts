import { MigrationInterface, QueryRunner } from 'typeorm';

/** Tickets of the demo `create_ticket` tool, keyed by the tool call's side-effect key. */
export class DemoTickets1764489900000 implements MigrationInterface {
  name = 'DemoTickets1764489900000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE demo_tickets (
        idempotency_key text PRIMARY KEY,
        ticket_id       text NOT NULL UNIQUE,
        order_id        text NOT NULL,
        reason          text NOT NULL,
        tenant_id       text NOT NULL,
        created_at      timestamptz(3) NOT NULL
      )`);
    await q.query(`CREATE INDEX demo_tickets_tenant_created ON demo_tickets (tenant_id, created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE demo_tickets`);
  }
}
