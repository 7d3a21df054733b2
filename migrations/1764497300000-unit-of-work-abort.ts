import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `uow_abort(reason)` raises SQLSTATE UW001 with `reason` as its message. A statement of several
 * writes (UnitOfWork.write / batch) calls it when a write's condition failed: the whole statement
 * is then rolled back, so its writes are all kept or none is. VOLATILE (the default), so the
 * planner never evaluates it ahead of the CASE branch that calls it.
 */
export class UnitOfWorkAbort1764497300000 implements MigrationInterface {
  name = 'UnitOfWorkAbort1764497300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION uow_abort(reason text) RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
      BEGIN
        RAISE EXCEPTION USING ERRCODE = 'UW001', MESSAGE = reason;
      END
      $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION uow_abort(text)`);
  }
}
