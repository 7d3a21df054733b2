import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { seedEmbeddedDatabase } from './embedded-template';
import { createFreshDatabase } from './fresh-database';
import { createApp, listen } from '../../src/app.factory';
import { Clock } from '../../src/common/clock/clock';
import { AppConfig, loadConfig } from '../../src/common/config/app-config';

/** API keys every test app knows: two tenants, admins and members. */
export const KEYS = {
  adminA: 'test-admin-a-0001',
  memberA1: 'test-member-a1-0001',
  memberA2: 'test-member-a2-0001',
  adminB: 'test-admin-b-0001',
  memberB: 'test-member-b-0001',
} as const;

export const TEST_API_KEYS = [
  `${KEYS.adminA}:tenant_a:admin_a:admin`,
  `${KEYS.memberA1}:tenant_a:user_a1:member`,
  `${KEYS.memberA2}:tenant_a:user_a2:member`,
  `${KEYS.adminB}:tenant_b:admin_b:admin`,
  `${KEYS.memberB}:tenant_b:user_b:member`,
].join(',');

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  text: string;
  body: T;
}

export interface TestApp {
  url: string;
  app: NestFastifyApplication;
  config: AppConfig;
  /** The database this app uses (a fresh one per app). */
  databaseUrl: string;
  dataDir: string;
  /** JSON request helper: `api.call(KEYS.adminA, 'POST', '/v1/sessions', {...}, {headers})`. */
  call<T = any>(key: string | null, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse<T>>;
  close(): Promise<void>;
}

export { createFreshDatabase };

/** `env.DATABASE_URL` set: that database (the caller's to drop), else a fresh one (dropped by close) or the embedded one. */
export async function startTestApp(env: Record<string, string> = {}, options: { clock?: Clock } = {}): Promise<TestApp> {
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-api-test-'));
  const db = env.DATABASE_URL ? null : await createFreshDatabase();
  // The embedded database starts migrated (a copy of a template) unless the caller brings its own DATA_DIR.
  if (!db && !env.DATABASE_URL && !env.DATA_DIR) await seedEmbeddedDatabase(dataDir);
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'fatal',
    // Tests poll quickly with one key; suites about rate limiting set their own limit.
    RATE_LIMIT_PER_MINUTE: '1000000',
    RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '1000000',
    API_KEYS: TEST_API_KEYS,
    // With API_KEYS set the allow-list is empty by default; the tests' tool servers and receivers are on loopback.
    OUTBOUND_URL_ALLOWLIST: 'http://127.0.0.1:*,http://localhost:*',
    DATA_DIR: dataDir,
    ...(db ? { DATABASE_URL: db.url } : {}),
    // The suites again with the NATS notifier: TEST_NATS_URL=nats://127.0.0.1:4222.
    ...(process.env.TEST_NATS_URL ? { NATS_URL: process.env.TEST_NATS_URL } : {}),
    ...env,
  });
  const app = await createApp(config, options);
  const url = await listen(app, config);
  const call = async (key: string | null, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const h: Record<string, string> = { ...headers };
    if (key) h.authorization = `Bearer ${key}`;
    if (body !== undefined) h['content-type'] = 'application/json';
    const res = await fetch(url + path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, headers: res.headers, text, body: parsed as any };
  };
  return {
    url,
    app,
    config,
    databaseUrl: env.DATABASE_URL ?? db?.url ?? 'embedded',
    dataDir,
    call,
    close: async () => {
      await app.close();
      if (db) await db.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
