import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { APP_DB_ROLE } from '../../migrations/1764497400000-audit-keyed-chain';

/** The outcome of one statement tried as the service's role. */
export type Attempt = { ok: true; rows: any[] } | { ok: false; code: string; message: string };
export type TryAsApp = (sql: string, params?: unknown[]) => Promise<Attempt>;

/**
 * A LOGIN role that is a member of `agent_api_app`, as README "Production database roles" tells
 * operators to create, on the PostgreSQL server of `baseUrl`; `urlFor(dbUrl)` is `dbUrl` as that
 * role. Creates `agent_api_app` first when no migration has yet (it is cluster-wide).
 */
export async function createAppLoginRole(baseUrl: string): Promise<{ role: string; urlFor: (dbUrl: string) => string; drop: () => Promise<void> }> {
  const role = `agent_api_it_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  // Roles are cluster-wide: created and dropped through the maintenance database (the test's may be gone by then).
  const maintenance = new URL(baseUrl);
  maintenance.pathname = '/postgres';
  const admin = new Client({ connectionString: maintenance.toString() });
  await admin.connect();
  try {
    await admin.query(`DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${APP_DB_ROLE}') THEN CREATE ROLE ${APP_DB_ROLE} NOLOGIN; END IF;
      EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`);
    await admin.query(`CREATE ROLE ${role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE IN ROLE ${APP_DB_ROLE}`);
  } finally {
    await admin.end();
  }
  return {
    role,
    urlFor: (dbUrl: string) => {
      const u = new URL(dbUrl);
      u.username = role;
      u.password = '';
      return u.toString();
    },
    drop: async () => {
      const c = new Client({ connectionString: maintenance.toString() });
      await c.connect();
      await c.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
      await c.end();
    },
  };
}

/**
 * Runs `fn` with statements executed as the service's role, never as the superuser the tests
 * connect as: on PostgreSQL (`databaseUrl` set) over a real connection of a LOGIN role that is a
 * member of `agent_api_app`; on the embedded database (one backend, one role) inside one
 * transaction under `SET LOCAL ROLE agent_api_app`, each statement in a savepoint.
 */
export async function withAppRole<T>(opts: { databaseUrl: string | null; dataSource: DataSource }, fn: (tryAsApp: TryAsApp) => Promise<T>): Promise<T> {
  if (opts.databaseUrl) {
    const login = await createAppLoginRole(opts.databaseUrl);
    const c = new Client({ connectionString: login.urlFor(opts.databaseUrl) });
    await c.connect();
    try {
      return await fn(async (sql, params) => {
        try {
          return { ok: true, rows: (await c.query(sql, params as any[])).rows };
        } catch (err) {
          return { ok: false, code: (err as { code?: string }).code ?? '', message: (err as Error).message };
        }
      });
    } finally {
      await c.end();
      await login.drop();
    }
  }
  return opts.dataSource.transaction(async (m) => {
    await m.query(`SET LOCAL ROLE ${APP_DB_ROLE}`);
    return fn(async (sql, params) => {
      await m.query('SAVEPOINT as_app');
      try {
        const rows = await m.query(sql, params);
        await m.query('RELEASE SAVEPOINT as_app');
        return { ok: true, rows };
      } catch (err) {
        await m.query('ROLLBACK TO SAVEPOINT as_app');
        const e = err as { code?: string; driverError?: { code?: string } };
        return { ok: false, code: e.code ?? e.driverError?.code ?? '', message: (err as Error).message };
      }
    });
  });
}
