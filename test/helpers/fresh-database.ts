import { Client } from 'pg';

/**
 * A fresh PostgreSQL database on the server of `DATABASE_URL` (created now, dropped by `drop()`),
 * or null when DATABASE_URL is unset (the caller then uses the embedded database).
 */
export async function createFreshDatabase(prefix = 'agent_api_t_'): Promise<{ url: string; drop: () => Promise<void> } | null> {
  const base = process.env.DATABASE_URL;
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
