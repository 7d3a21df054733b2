import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCli, runCli } from '../helpers/audit-cli';
import { seedEmbeddedDatabase } from '../helpers/embedded-template';
import { createFreshDatabase } from '../helpers/fresh-database';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * Issue 32 item 1, "rotatable with old keys still listed": the service signs with AUDIT_SIGNING_KEY
 * k1, is restarted on the same database with k2; the public-key route lists both (k2 current),
 * an export spanning both eras verifies offline with the route's JSON (both keys), and fails with
 * either key alone, naming the checkpoint whose signature it cannot check. Both databases (the
 * embedded one by reusing DATA_DIR, PostgreSQL by reusing the database).
 */
type Line = Record<string, any>;
const pem = () => generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

describe('audit signing key rotation (issue 32)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'audit-rotation-'));
  let db: Awaited<ReturnType<typeof createFreshDatabase>>;
  let t: TestApp | undefined;

  beforeAll(async () => {
    buildCli();
    db = await createFreshDatabase();
    // Embedded: both apps use DATA_DIR/data; it starts as a migrated copy, as other test apps do.
    if (!db) await seedEmbeddedDatabase(join(dir, 'data'));
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const start = (key: string) =>
    startTestApp({ DATA_DIR: join(dir, 'data'), ...(db ? { DATABASE_URL: db.url } : {}), AUDIT_SIGNING_KEY: key, AUDIT_CHECKPOINT_EVERY: '1000', AUDIT_CHECKPOINT_MS: '3600000' });

  async function writeAndExport(app: TestApp, n: number): Promise<Line[]> {
    for (let i = 0; i < n; i++) expect((await app.call(KEYS.adminA, 'POST', '/v1/sessions', { title: `s${i}` })).status).toBe(201);
    // No `to`: the export signs the head first, with the key the service holds now.
    const res = await fetch(`${app.url}/v1/admin/audit/export`, { headers: { authorization: `Bearer ${KEYS.adminA}` } });
    expect(res.status).toBe(200);
    return (await res.text()).trim().split('\n').map((l) => JSON.parse(l) as Line);
  }

  it('old keys stay listed after a rotation and older checkpoints still verify; one key alone does not', async () => {
    t = await start(pem());
    const first = await writeAndExport(t, 3);
    const k1 = (await t.call(KEYS.adminA, 'GET', '/v1/admin/audit/public-key')).body;
    expect(k1.data).toHaveLength(1);
    const k1Id = k1.current_key_id as string;
    expect(first.filter((l) => l.kind === 'checkpoint').map((c) => c.key_id)).toEqual([k1Id]);
    await t.close();
    t = undefined;

    t = await start(pem());
    const lines = await writeAndExport(t, 3);
    const keys = await t.call(KEYS.adminA, 'GET', '/v1/admin/audit/public-key');
    expect(keys.status).toBe(200);
    const k2Id = keys.body.current_key_id as string;
    expect(k2Id).not.toBe(k1Id);
    expect(keys.body.data.map((k: Line) => [k.key_id, k.current]).sort()).toEqual([[k1Id, false], [k2Id, true]].sort());
    // The export spans both eras: a checkpoint signed with k1, then the head signed with k2.
    const checkpoints = lines.filter((l) => l.kind === 'checkpoint');
    expect(checkpoints.map((c) => c.key_id)).toEqual([k1Id, k2Id]);
    expect((await t.call(KEYS.adminA, 'GET', '/v1/admin/audit/verify')).body).toMatchObject({ ok: true, checked: 6 });

    const file = join(dir, 'export.ndjson');
    writeFileSync(file, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    const both = join(dir, 'keys.json');
    writeFileSync(both, JSON.stringify(keys.body));
    const ok = await runCli(['audit', 'verify', '--file', file, '--public-key', both]);
    expect({ code: ok.code, out: ok.stdout }).toMatchObject({ code: 0, out: expect.stringContaining('2 signed checkpoints') });
    for (const only of [k1Id, k2Id]) {
      const one = join(dir, `${only}.pem`);
      writeFileSync(one, keys.body.data.find((k: Line) => k.key_id === only).public_key_pem);
      const bad = await runCli(['audit', 'verify', '--file', file, '--public-key', one]);
      const missing = checkpoints.find((c) => c.key_id !== only)!;
      expect(bad.code).not.toBe(0);
      expect(bad.stdout).toMatch(/checkpoint_signature_invalid/);
      expect(bad.stdout).toContain(`seq ${missing.seq}`);
    }
  }, 180_000); // two app starts on one database and three CLI processes (over 60 s at load 8, embedded)
});
