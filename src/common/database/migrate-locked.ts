import { DataSource, Migration } from 'typeorm';
import { MigrationContext, withMigrationContext } from '../../../migrations/migration-context';

/** Any constant: the advisory lock key every node takes while it migrates. */
const MIGRATION_LOCK_KEY = 7_316_104_202;

/** In-process turn: PGlite is one backend session, where advisory locks are re-entrant. */
let turn: Promise<unknown> = Promise.resolve();

/**
 * Runs pending migrations while holding a PostgreSQL advisory lock on a dedicated connection, so
 * nodes starting at once against one fresh database migrate one after the other (TypeORM itself
 * takes no lock); the second finds nothing left to do. Within one process calls also take turns.
 * `context` is what migrations may read from the configuration (see migrations/migration-context.ts).
 */
export function runMigrationsLocked(dataSource: DataSource, context: MigrationContext = { auditHmacKey: null }): Promise<Migration[]> {
  const run = turn.then(() => withMigrationContext(context, () => migrateUnderAdvisoryLock(dataSource)));
  turn = run.catch(() => undefined);
  return run;
}

async function migrateUnderAdvisoryLock(dataSource: DataSource): Promise<Migration[]> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      return await dataSource.runMigrations({ transaction: 'each' });
    } finally {
      await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
  } finally {
    await runner.release();
  }
}
