/**
 * What a migration may need from the configuration while `runMigrationsLocked` runs it (TypeORM
 * builds migrations with `new`, so they can take no constructor arguments): the audit chain's
 * key, for the migration that tags the existing chain heads with it. It lives with the migrations
 * because they import nothing from src/; the runner (src/common/database) sets it.
 */
export interface MigrationContext {
  auditHmacKey: Buffer | null;
}

let current: MigrationContext = { auditHmacKey: null };

export function migrationContext(): MigrationContext {
  return current;
}

/** Runs `fn` with `ctx` visible to migrations (callers take turns: `runMigrationsLocked` serialises them). */
export async function withMigrationContext<T>(ctx: MigrationContext, fn: () => Promise<T>): Promise<T> {
  const before = current;
  current = ctx;
  try {
    return await fn();
  } finally {
    current = before;
  }
}
