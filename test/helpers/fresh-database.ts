import { Client } from 'pg';

/**
 * A fresh PostgreSQL database on the server of `base` (default `DATABASE_URL`; created now,
 * dropped by `drop()`), or null when there is no server (the caller then uses the embedded
 * database). Shared by the test apps, the reliability suite and the benchmarks.
 */
export async function createFreshDatabase(
  prefix = 'agent_api_t_',
  base: string | undefined = process.env.DATABASE_URL,
): Promise<{ url: string; drop: () => Promise<void> } | null> {
  if (!base) return null;
  const name = `${prefix}${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new URL(base);
  admin.pathname = '/postgres';
  const c = new Client({ connectionString: admin.toString() });
  await c.connect();
  await c.query(`CREATE DATABASE ${name}`);
  await c.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const d = new Client({ connectionString: admin.toString() });
      await d.connect();
      await d.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
      await d.end();
    },
  };
}
