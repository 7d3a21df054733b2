import { Global, Inject, Injectable, Logger, Module, OnApplicationShutdown, OnModuleInit, Optional } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../../migrations';
import { AppConfig } from '../config/app-config';
import { resolveAuditHmacKey } from '../config/audit-hmac-key';
import { EmbeddedPostgres } from './embedded-postgres';
import { runMigrationsLocked } from './migrate-locked';
import { UnitOfWork } from './unit-of-work';
import { PriorityPool, priorityPg } from './priority-pool';
import { Metrics } from '../metrics/metrics';
import { PreparedStatementsClient } from './prepared-statements';

/** Where the database is: the configured PostgreSQL, or the embedded one this process started. */
export class DatabaseTarget {
  constructor(
    readonly url: string,
    readonly embedded: EmbeddedPostgres | null,
  ) {}
  get kind(): 'embedded' | 'postgres' {
    return this.embedded ? 'embedded' : 'postgres';
  }
}

export const DATABASE_TARGET = Symbol('DATABASE_TARGET');

const EMBEDDED_ANALYZE_EVERY_MS = 10 * 60_000;

async function resolveTarget(config: AppConfig): Promise<DatabaseTarget> {
  if (config.databaseUrl) return new DatabaseTarget(config.databaseUrl, null);
  const embedded = new EmbeddedPostgres(config.dataDir, Math.max(config.dbPoolSize + 5, 8));
  const url = await embedded.start();
  return new DatabaseTarget(url, embedded);
}

@Injectable()
class DatabaseLifecycle implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Database');
  constructor(
    private readonly dataSource: DataSource,
    @Inject(DATABASE_TARGET) private readonly target: DatabaseTarget,
    private readonly config: AppConfig,
    @Optional() private readonly metrics?: Metrics,
  ) {}

  private analyzeTimer: NodeJS.Timeout | null = null;

  /** Schema first: before any other module's start-up hook touches a table. */
  async onModuleInit(): Promise<void> {
    const pool = (this.dataSource.driver as unknown as { master?: unknown }).master;
    const metrics = this.metrics;
    if (pool instanceof PriorityPool && metrics) pool.onWait = (level, seconds) => metrics.recordPoolWait(level, seconds);
    const applied = await migrateAsOwner(this.dataSource, this.config);
    if (applied.length) this.logger.log(`applied ${applied.length} migration(s): ${applied.map((m) => m.name).join(', ')}`);
    if (this.target.embedded) {
      // PGlite has no autovacuum: refresh the planner's statistics ourselves, or keyset reads of
      // a large event stream fall back to scans (bench B5: 131 ms instead of 15 ms).
      this.analyzeTimer = setInterval(() => void this.analyze(), EMBEDDED_ANALYZE_EVERY_MS);
      this.analyzeTimer.unref();
    }
  }

  async analyze(): Promise<void> {
    try {
      await this.dataSource.query('ANALYZE');
    } catch (err) {
      this.logger.warn(`ANALYZE failed: ${(err as Error).message}`);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.analyzeTimer) clearInterval(this.analyzeTimer);
    if (this.dataSource.isInitialized) await this.dataSource.destroy().catch(() => undefined);
    if (this.target.embedded) {
      await this.target.embedded.stop();
      this.logger.log('embedded database closed');
    }
  }
}

/**
 * Applies pending migrations as the schema owner: on a short-lived connection to
 * DATABASE_OWNER_URL when set (DATABASE_URL then names the service's role, which may not run DDL),
 * else on `appDataSource` (the embedded database, or one role for both). The migrations get the
 * audit key (one of them tags the existing audit chain heads with it).
 */
export async function migrateAsOwner(appDataSource: DataSource, config: AppConfig) {
  const context = { auditHmacKey: resolveAuditHmacKey(config) };
  if (!config.databaseOwnerUrl) {
    try {
      return await runMigrationsLocked(appDataSource, context);
    } catch (err) {
      if ((err as { code?: string }).code !== '42501') throw err;
      throw new Error(
        `migrations are pending and the role of DATABASE_URL may not apply them (${(err as Error).message}): ` +
          'set DATABASE_OWNER_URL to the schema owner, or run `npm run migration:run` with it first',
      );
    }
  }
  const owner = new DataSource({ ...dataSourceOptions(config.databaseOwnerUrl, 2, config.dbQueryTimeoutMs), migrationsRun: false });
  await owner.initialize();
  try {
    return await runMigrationsLocked(owner, context);
  } finally {
    await owner.destroy().catch(() => undefined);
  }
}

/** Builds TypeORM options for a URL; shared by the app and the migration CLI. */
export function dataSourceOptions(url: string, poolSize: number, queryTimeoutMs = 15_000, options: { preparedStatements?: boolean; backgroundSliceUs?: number } = {}) {
  return {
    type: 'postgres' as const,
    url,
    migrations: MIGRATIONS,
    // Applied by DatabaseLifecycle under an advisory lock (several nodes may start at once).
    migrationsRun: false,
    migrationsTransactionMode: 'each' as const,
    synchronize: false,
    logging: false,
    // pg with a pool that serves waiting callers by priority (requests before background work).
    driver: priorityPg,
    extra: {
      max: poolSize,
      connectionTimeoutMillis: 5000,
      // A query the database does not answer in time fails (503 `unavailable` to a request)
      // instead of hanging through a network partition.
      query_timeout: queryTimeoutMs,
      idleTimeoutMillis: 30000,
      application_name: 'agent-api',
      // PriorityPool: background work's query results reach it in bounded slices of the event loop.
      backgroundSliceUs: options.backgroundSliceUs ?? 0,
      // Real PostgreSQL only (see PreparedStatementsClient): statements parsed once per connection.
      ...(options.preparedStatements ? { Client: PreparedStatementsClient } : {}),
    },
  };
}

@Global()
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [AppConfig, DATABASE_TARGET],
      extraProviders: [],
      useFactory: (config: AppConfig, target: DatabaseTarget) => ({
        ...dataSourceOptions(target.url, config.dbPoolSize, config.dbQueryTimeoutMs, {
          preparedStatements: target.kind === 'postgres',
          backgroundSliceUs: config.backgroundSliceUs,
        }),
        autoLoadEntities: true,
        // Fail fast at start-up rather than retrying for minutes.
        retryAttempts: 3,
        retryDelay: 1000,
      }),
    }),
  ],
  providers: [UnitOfWork, DatabaseLifecycle],
  exports: [UnitOfWork],
})
export class DatabaseModule {}

/**
 * The database target (`DATABASE_TARGET`), injectable everywhere: global and apart from
 * DatabaseModule, because the TypeORM module that DatabaseModule imports needs it for its options.
 */
@Global()
@Module({
  providers: [{ provide: DATABASE_TARGET, inject: [AppConfig], useFactory: resolveTarget }],
  exports: [DATABASE_TARGET],
})
export class DatabaseTargetModule {}
