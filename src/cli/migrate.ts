// First: refuses a Node.js older than 22.12 with one line, before anything else loads.
import '../node-version';
import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { ConfigError, loadConfig } from '../common/config/app-config';
import { dataSourceOptions } from '../common/database/database.module';
import { runMigrationsLocked } from '../common/database/migrate-locked';
import { EmbeddedPostgres } from '../common/database/embedded-postgres';
import { resolveAuditHmacKey } from '../common/config/audit-hmac-key';

/**
 * `npm run migration:run`: applies pending migrations to DATABASE_OWNER_URL (the schema owner)
 * when set, else to DATABASE_URL, or to the embedded database under DATA_DIR when DATABASE_URL
 * is unset, with the app's own data source options and audit key.
 */
export async function runMigrations(env: NodeJS.ProcessEnv = process.env): Promise<string[]> {
  // This process serves nothing: the listen address (and the HOST / API_KEYS rule) is not its concern.
  const { HOST: _host, ...rest } = env;
  const config = loadConfig(rest);
  const embedded = config.databaseUrl ? null : new EmbeddedPostgres(config.dataDir, 4);
  const url = config.databaseOwnerUrl ?? config.databaseUrl ?? (await embedded!.start());
  const dataSource = new DataSource({ ...dataSourceOptions(url, 2), migrationsRun: false });
  try {
    await dataSource.initialize();
    const applied = await runMigrationsLocked(dataSource, { auditHmacKey: resolveAuditHmacKey(config) });
    return applied.map((m) => m.name);
  } finally {
    if (dataSource.isInitialized) await dataSource.destroy();
    if (embedded) await embedded.stop();
  }
}

if (require.main === module) {
  runMigrations()
    .then((names) => {
      process.stdout.write(names.length ? `applied ${names.length} migration(s): ${names.join(', ')}\n` : 'database is up to date\n');
      process.exit(0);
    })
    .catch((err) => {
      process.stderr.write(err instanceof ConfigError ? `${err.message}\n` : `migration failed: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    });
}
