import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { APP_DB_ROLE } from '../../migrations/1764497400000-audit-keyed-chain';
import { AUDIT_HMAC_KEY_FILE } from '../../src/common/config/audit-hmac-key';
import { AuditChainKey, legacyAuditHash } from '../../src/modules/audit/domain/audit-record';
import { AUDIT_COLUMNS, auditRowToDomain } from '../../src/modules/audit/infrastructure/audit-row';
import { AuditCheckpointer } from '../../src/modules/audit/domain/audit-checkpointer';
import { AuditRetention } from '../../src/modules/audit/domain/audit-retention';
import { createAppLoginRole } from '../helpers/app-role';
import { createSession, startRun, userInput, waitForRun } from '../helpers/runs';
import { createFreshDatabase, KEYS, startTestApp, TestApp } from '../helpers/test-app';

const ROOT = join(__dirname, '..', '..');
const POSTGRES = !!process.env.DATABASE_URL;

/** A completed run (tool call included), then the audit trail of the tenant verifies. */
async function runAndVerify(t: TestApp): Promise<number> {
  const sid = await createSession(t, KEYS.memberA1);
  const started = await startRun(t, KEYS.memberA1, sid, {
    input: userInput('Where is my order O-1002?'),
  });
  expect(started.status).toBe(202);
  const run = await waitForRun(t, KEYS.memberA1, started.body.run_id, (r) => r.status === 'completed' || r.status === 'failed');
  expect(run.status).toBe('completed');
  const audit = await t.call(KEYS.adminA, 'GET', `/v1/admin/audit?run_id=${run.id}&limit=100`);
  expect(audit.status).toBe(200);
  expect(audit.body.data.map((r: { action: string }) => r.action)).toEqual(
    expect.arrayContaining(['run_event.run.started', 'run_event.tool.completed', 'run_event.run.finished']),
  );
  const verified = await t.call(KEYS.adminA, 'GET', '/v1/admin/audit/verify');
  expect(verified.status).toBe(200);
  expect(verified.body).toEqual({ ok: true, checked: expect.any(Number) });
  expect(verified.body.checked).toBeGreaterThan(5);
  return verified.body.checked;
}

/** What the migrations granted the service's role, read from the catalog (the same on both databases). */
async function grants(db: DataSource) {
  const rows: Array<{ t: string; p: string; ok: boolean }> = await db.query(
    `SELECT t, p, has_table_privilege('${APP_DB_ROLE}', t, p) AS ok
       FROM unnest(ARRAY['audit_records', 'audit_chain_heads', 'audit_outbox', 'sessions', 'migrations', 'audit_checkpoints', 'audit_signing_keys', 'audit_legal_holds']) AS t,
            unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) AS p`,
  );
  const out: Record<string, string[]> = {};
  for (const r of rows) if (r.ok) (out[r.t] ??= []).push(r.p);
  return out;
}

const EXPECTED_GRANTS = {
  audit_records: ['SELECT', 'INSERT'],
  audit_chain_heads: ['SELECT'],
  audit_outbox: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
  sessions: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
  migrations: ['SELECT'],
  audit_checkpoints: ['SELECT', 'INSERT'],
  audit_signing_keys: ['SELECT', 'INSERT'],
  audit_legal_holds: ['SELECT', 'INSERT', 'UPDATE'],
};

describe('audit: database roles and the chain key', () => {
  it(
    POSTGRES
      ? '(d) runs end to end as a non-superuser, non-owner role (DATABASE_URL) with migrations as the owner (DATABASE_OWNER_URL)'
      : '(d) runs end to end on the embedded database (one role), with the grants for the service role in place',
    async () => {
      const pg = POSTGRES ? await createFreshDatabase() : null;
      const login = pg ? await createAppLoginRole(pg.url) : null;
      if (pg && login) {
        // Without the owner's URL the service's role can't create the schema, and says what to do.
        await expect(startTestApp({ DATABASE_URL: login.urlFor(pg.url) })).rejects.toThrow(
          /migrations are pending and the role of DATABASE_URL may not apply them .*permission denied.*set DATABASE_OWNER_URL/,
        );
      }
      const t = await startTestApp(pg && login ? { DATABASE_URL: login.urlFor(pg.url), DATABASE_OWNER_URL: pg.url } : {});
      try {
        const db = t.app.get(DataSource);
        const [me]: Array<{ name: string; superuser: boolean; owner: string }> = await db.query(
          `SELECT current_user AS name, (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS superuser,
                  (SELECT tableowner FROM pg_tables WHERE tablename = 'audit_records') AS owner`,
        );
        if (login) {
          expect(me).toEqual({ name: login.role, superuser: false, owner: 'postgres' });
          // The service's own connections can't bypass the triggers or touch the trail.
          await expect(db.query(`SET session_replication_role = replica`)).rejects.toThrow(/permission denied/);
          await expect(db.query(`UPDATE audit_records SET data = '{}'::jsonb`)).rejects.toThrow(/permission denied/);
          await expect(db.query(`DELETE FROM audit_chain_heads`)).rejects.toThrow(/permission denied/);
        } else {
          expect(me.name).toBe(me.owner);
        }
        await expect(grants(db)).resolves.toEqual(EXPECTED_GRANTS);
        const checked = await runAndVerify(t);

        // Retention as the service's role (no DELETE on the records): through audit_prune, up to a signed checkpoint only.
        for (let i = 0; i < 3; i++) await createSession(t, KEYS.adminB);
        await expect(t.call(KEYS.adminB, 'GET', '/v1/admin/audit/verify')).resolves.toMatchObject({ body: { ok: true, checked: 3 } });
        await expect(t.app.get(AuditCheckpointer).checkpoint('tenant_b', true)).resolves.toMatchObject({ outcome: 'signed', checkpoint: { seq: 3 } });
        await createSession(t, KEYS.adminB);
        await expect(t.app.get(AuditRetention).pruneTenant('tenant_b', new Date())).resolves.toBe(3);
        await expect(t.call(KEYS.adminB, 'GET', '/v1/admin/audit/verify')).resolves.toMatchObject({ body: { ok: true, checked: 1 } });
        await expect(db.query(`DELETE FROM audit_records WHERE tenant_id = 'tenant_b'`)).rejects.toThrow(login ? /permission denied/ : /append-only/);

        // Tampering as the owner (superuser, triggers off) shows in GET /v1/admin/audit/verify's contract shape.
        const owner = pg ? new DataSource({ type: 'postgres', url: pg.url }) : db;
        if (pg) await owner.initialize();
        try {
          const [row] = await owner.query(`SELECT ${AUDIT_COLUMNS} FROM audit_records WHERE tenant_id = 'tenant_a' AND seq = 2`);
          const r = auditRowToDomain(row);
          const { prevHash, hash: _old, mac: _mac, ...body } = r;
          await owner.transaction(async (m) => {
            await m.query(`SET LOCAL session_replication_role = replica`);
            await m.query(`UPDATE audit_records SET outcome = 'forbidden', hash = $2 WHERE id = $1`, [r.id, legacyAuditHash(prevHash, { ...body, outcome: 'forbidden' })]);
          });
        } finally {
          if (pg) await owner.destroy();
        }
        const broken = await t.call(KEYS.adminA, 'GET', '/v1/admin/audit/verify');
        expect(broken.status).toBe(200);
        expect(broken.body).toEqual({ ok: false, checked: 1, first_broken: { id: expect.stringMatching(/^aud_/), seq: 2, reason: 'mac_mismatch' } });
        expect(checked).toBeGreaterThan(1);
        if (login && pg) {
          // Migrated already: a node with only the service's role starts and is ready (nothing to apply).
          const second = await startTestApp({ DATABASE_URL: login.urlFor(pg.url) });
          try {
            await expect(second.call(null, 'GET', '/readyz')).resolves.toMatchObject({ status: 200 });
          } finally {
            await second.close();
          }
        }
      } finally {
        await t.close();
        if (pg) await pg.drop();
        if (login) await login.drop();
      }
    },
  );

  it('the key generated into DATA_DIR is 0600, kept across restarts; another key neither verifies nor extends the chain', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'agent-api-key-'));
    const pg = await createFreshDatabase();
    const env = { DATA_DIR: dataDir, ...(pg ? { DATABASE_URL: pg.url } : {}) };
    try {
      let t = await startTestApp(env);
      const file = join(dataDir, AUDIT_HMAC_KEY_FILE);
      const key = readFileSync(file, 'utf8');
      try {
        expect(statSync(file).mode & 0o777).toBe(0o600);
        expect(key.trim()).toMatch(/^[A-Za-z0-9_-]{43}$/);
        expect(t.app.get(AuditChainKey).keyId).toBe(new AuditChainKey(Buffer.from(key.trim())).keyId);
        await createSession(t, KEYS.adminA);
        await expect(t.call(KEYS.adminA, 'GET', '/v1/admin/audit/verify')).resolves.toMatchObject({ body: { ok: true, checked: 1 } });
      } finally {
        await t.close();
      }

      t = await startTestApp(env);
      try {
        expect(readFileSync(file, 'utf8')).toBe(key);
        await createSession(t, KEYS.adminA);
        await expect(t.call(KEYS.adminA, 'GET', '/v1/admin/audit/verify')).resolves.toMatchObject({ body: { ok: true, checked: 2 } });
      } finally {
        await t.close();
      }

      // A node with another key: the chain does not verify with it, and its records stay queued
      // rather than being chained (and tagged) onto a head it can't authenticate.
      t = await startTestApp({ ...env, AUDIT_HMAC_KEY: 'another-key-that-is-long-enough-000000' });
      try {
        await createSession(t, KEYS.adminA);
        await expect(t.call(KEYS.adminA, 'GET', '/v1/admin/audit/verify')).resolves.toMatchObject({
          // Hashes are public SHA-256 (they recompute); the mac of record 1 is not this key's.
          body: { ok: false, checked: 0, first_broken: { seq: 1, reason: 'mac_mismatch' } },
        });
        const db = t.app.get(DataSource);
        await expect(db.query(`SELECT count(*)::int AS n FROM audit_outbox WHERE tenant_id = 'tenant_a'`)).resolves.toEqual([{ n: 1 }]);
        await expect(db.query(`SELECT last_seq::int AS n FROM audit_chain_heads WHERE tenant_id = 'tenant_a'`)).resolves.toEqual([{ n: 2 }]);
      } finally {
        await t.close();
      }
    } finally {
      if (pg) await pg.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000);

  describe('(e) start-up of the real process (node dist/src/main.js)', () => {
    beforeAll(() => {
      execFileSync(join(ROOT, 'node_modules', '.bin', 'swc'), ['src', 'migrations', '-d', 'dist', '--copy-files', '--quiet'], { cwd: ROOT, stdio: 'pipe' });
    }, 120_000);

    function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string; ms: number }> {
      const started = Date.now();
      return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, [join(ROOT, 'dist', 'src', 'main.js')], {
          cwd: ROOT,
          env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', PORT: '0', HOST: '127.0.0.1', ...env },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stderr = '';
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error(`still running after 20 s: ${stderr}`));
        }, 20_000);
        child.on('close', (code) => {
          clearTimeout(timer);
          resolve({ code, stderr, ms: Date.now() - started });
        });
      });
    }

    it('fails at once, saying why, in production with DATABASE_URL and no AUDIT_HMAC_KEY (and generates no key)', async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'agent-api-prod-'));
      try {
        // Nothing listens on port 9: the configuration is refused before any connection is tried.
        const res = await start({ NODE_ENV: 'production', DATABASE_URL: 'postgres://agent@127.0.0.1:9/agent_api', DATA_DIR: dataDir });
        expect(res.code).toBe(1);
        expect(res.stderr).toContain('invalid configuration');
        expect(res.stderr).toContain('AUDIT_HMAC_KEY=(unset): is required in production (NODE_ENV=production with DATABASE_URL)');
        expect(existsSync(join(dataDir, AUDIT_HMAC_KEY_FILE))).toBe(false);
        const short = await start({ NODE_ENV: 'production', DATABASE_URL: 'postgres://agent@127.0.0.1:9/agent_api', DATA_DIR: dataDir, AUDIT_HMAC_KEY: 'too-short' });
        expect(short.code).toBe(1);
        expect(short.stderr).toContain('AUDIT_HMAC_KEY=(9 characters, not shown): must be at least 32 characters');
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    }, 60_000);
  });
});
