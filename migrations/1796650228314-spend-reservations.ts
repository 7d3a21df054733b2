import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Spend reservations (the usage module's): a model call about to start holds its estimated cost
 * against the tenant's spend limit until its turn commits its real cost (then the row goes), so
 * concurrent runs cannot all start calls against the same remainder. One row per run (a run makes
 * one call at a time), naming the turn's message that holds it; `expires_at` follows the run's lease (renewed by its heartbeat): the
 * reservation of a node that died stops counting when its lease would.
 */
export class SpendReservations1796650228314 implements MigrationInterface {
  name = 'SpendReservations1796650228314';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE spend_reservations (
        run_id     text PRIMARY KEY,
        tenant_id  text NOT NULL,
        message_id text NOT NULL,
        amount     numeric(30, 15) NOT NULL CHECK (amount >= 0),
        expires_at timestamptz(3) NOT NULL
      )`);
    await q.query(`CREATE INDEX spend_reservations_tenant ON spend_reservations (tenant_id, expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE spend_reservations`);
  }
}
