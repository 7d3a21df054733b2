import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { CSV_COLUMNS } from '../../src/modules/audit/domain/audit-export';
import { auditRecordHash } from '../../src/modules/audit/domain/audit-record';
import { AuditRetention } from '../../src/modules/audit/domain/audit-retention';
import { AUDIT_COLUMNS, auditRowToDomain } from '../../src/modules/audit/infrastructure/audit-row';
import { buildCli, runCli } from '../helpers/audit-cli';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * Issue 32: the export (both formats), offline verification with the real CLI (a child process,
 * no server), what it catches (one byte, a reorder, a deletion, a superuser's rewrite with every
 * later hash recomputed), retention up to a signed checkpoint and legal hold. Both databases.
 */
const ROOT = join(__dirname, '..', '..');

type Line = Record<string, any>;
const parseLines = (text: string): Line[] => text.trim().split('\n').map((l) => JSON.parse(l) as Line);
const ndjson = (lines: Line[]) => lines.map((l) => JSON.stringify(l)).join('\n') + '\n';

describe('audit export, offline verification, retention (issue 32)', () => {
  let t: TestApp;
  let dir: string;
  let keyFile: string;
  let db: DataSource;

  beforeAll(async () => {
    buildCli();
    t = await startTestApp({ AUDIT_CHECKPOINT_EVERY: '10', AUDIT_CHECKPOINT_MS: '3600000' });
    db = t.app.get(DataSource);
    dir = mkdtempSync(join(tmpdir(), 'audit-export-'));
    const keys = await t.call(KEYS.adminA, 'GET', '/v1/admin/audit/public-key');
    expect(keys.status).toBe(200);
    expect(keys.body).toMatchObject({ object: 'list', current_key_id: expect.stringMatching(/^[0-9a-f]{16}$/) });
    const current = keys.body.data.find((k: Line) => k.current);
    expect(current).toMatchObject({ key_id: keys.body.current_key_id, algorithm: 'ed25519', public_key_pem: expect.stringContaining('BEGIN PUBLIC KEY') });
    keyFile = join(dir, 'key.pem');
    writeFileSync(keyFile, current.public_key_pem);
    // A member may not read keys or export.
    await expect(t.call(KEYS.memberA1, 'GET', '/v1/admin/audit/public-key')).resolves.toMatchObject({ status: 403 });
    await expect(t.call(KEYS.memberA1, 'GET', '/v1/admin/audit/export')).resolves.toMatchObject({ status: 403 });
  });
  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function writeRecords(key: string, n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      const r = await t.call(key, 'POST', '/v1/sessions', { title: `s${i}`, metadata: { i: String(i), note: 'ünïcødé "quoted", comma' } });
      expect(r.status).toBe(201);
    }
  }

  async function exportOf(key: string, query = ''): Promise<{ status: number; text: string; type: string | null }> {
    const res = await fetch(`${t.url}/v1/admin/audit/export${query}`, { headers: { authorization: `Bearer ${key}` } });
    return { status: res.status, text: await res.text(), type: res.headers.get('content-type') };
  }

  /** The offline recipe of docs/audit.md (node:crypto only), run as written there. */
  async function recipeVerify(text: string, name: string) {
    const readme = readFileSync(join(ROOT, 'docs', 'audit.md'), 'utf8');
    const block = /<!-- audit-verify-recipe -->\n```js\n([\s\S]+?)```/.exec(readme);
    expect(block).not.toBeNull();
    expect(block![1].trim().split('\n').length).toBeLessThanOrEqual(26);
    const script = join(dir, 'recipe.mjs');
    writeFileSync(script, block![1]);
    const file = join(dir, name);
    writeFileSync(file, text);
    return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [script, file, keyFile], { cwd: dir, env: { PATH: process.env.PATH }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  }

  async function cliVerify(text: string, name: string) {
    const file = join(dir, name);
    writeFileSync(file, text);
    return runCli(['audit', 'verify', '--file', file, '--public-key', keyFile]);
  }

  it('exports ndjson and csv; the CLI verifies it offline and names a changed byte, a reorder, a deletion', async () => {
    await writeRecords(KEYS.adminA, 25);
    const nd = await exportOf(KEYS.adminA);
    expect(nd.status).toBe(200);
    expect(nd.type).toMatch(/^application\/x-ndjson/);
    const lines = parseLines(nd.text);
    expect(lines[0]).toMatchObject({ kind: 'header', format: 'agent-api.audit-export', version: 1, tenant_id: 'tenant_a', from_seq: 1 });
    const records = lines.filter((l) => l.kind === 'record');
    const checkpoints = lines.filter((l) => l.kind === 'checkpoint');
    expect(records.length).toBeGreaterThanOrEqual(25);
    expect(records.map((r) => r.seq)).toEqual(records.map((_, i) => i + 1));
    expect(lines[0].to_seq).toBe(records.length);
    expect(lines[lines.length - 1]).toEqual({ kind: 'end', records: records.length, checkpoints: checkpoints.length });
    // A count checkpoint signs the head a drain reached once AUDIT_CHECKPOINT_EVERY (10) records
    // are unsigned (one drain may chain all 25), and the export signs the head (no `to`).
    expect(checkpoints.length).toBeGreaterThanOrEqual(1);
    expect(checkpoints[checkpoints.length - 1].seq).toBe(records.length);
    for (const c of checkpoints) {
      const i = lines.indexOf(c);
      expect(lines[i - 1]).toMatchObject({ kind: 'record', seq: c.seq, hash: c.hash });
    }
    // The public hash is plain SHA-256 over prev_hash + the canonical record.
    const { kind: _k, prev_hash, hash, mac, hash_alg, ...fields } = records[3];
    expect(hash_alg).toBe('sha256');
    expect(mac).toMatch(/^[0-9a-f]{64}$/);
    expect(hash).toBe(
      auditRecordHash(prev_hash, {
        id: fields.id,
        tenantId: fields.tenant_id,
        seq: fields.seq,
        occurredAt: new Date(fields.occurred_at),
        actorSubjectId: fields.actor_subject_id,
        actorRole: fields.actor_role,
        actorKeyId: fields.actor_key_id,
        action: fields.action,
        resourceType: fields.resource_type,
        resourceId: fields.resource_id,
        sessionId: fields.session_id,
        runId: fields.run_id,
        requestId: fields.request_id,
        outcome: fields.outcome,
        status: fields.status,
        data: fields.data,
      }),
    );

    const ok = await cliVerify(nd.text, 'full.ndjson');
    expect(ok.stderr).toBe('');
    expect(ok.stdout).toContain(`✓ export verified: ${records.length} records (seq 1..${records.length}) of tenant_a, ${checkpoints.length} signed checkpoints, signed up to seq ${records.length}`);
    expect(ok.code).toBe(0);
    await expect(recipeVerify(nd.text, 'full-recipe.ndjson')).resolves.toMatchObject({ code: 0, stdout: `ok up to seq ${records.length}\n` });

    // One byte of one record's data.
    const byte = nd.text.replace(/"note":"ünïcødé/, '"note":"ünïcødf');
    expect(byte).not.toBe(nd.text);
    const changed = await cliVerify(byte, 'byte.ndjson');
    expect(changed.code).toBe(1);
    const changedRecipe = await recipeVerify(byte, 'byte-recipe.ndjson');
    expect(changedRecipe.code).not.toBe(0);
    expect(changedRecipe.stderr).toMatch(/record aud_\w+ was changed/);
    expect(changed.stdout).toContain(`✗ export does not verify: hash_mismatch at line ${lines.indexOf(records.find((r) => r.data?.request?.body?.metadata?.note)!) + 1}`);

    // Two records swapped.
    const i5 = lines.indexOf(records[4]);
    const i6 = lines.indexOf(records[5]);
    const swapped = [...lines];
    [swapped[i5], swapped[i6]] = [swapped[i6], swapped[i5]];
    const reordered = await cliVerify(ndjson(swapped), 'swapped.ndjson');
    expect(reordered.code).toBe(1);
    expect(reordered.stdout).toContain(`seq_gap at line ${i5 + 1}, seq 6 (${records[5].id})`);

    // One record deleted.
    const deleted = await cliVerify(ndjson(lines.filter((l) => l !== records[7])), 'deleted.ndjson');
    expect(deleted.code).toBe(1);
    expect(deleted.stdout).toContain(`seq_gap at line ${lines.indexOf(records[8])}, seq 9 (${records[8].id}): record ${records[8].id} has seq 9 where seq 8 was expected`);

    // Cut off: no end line.
    const cut = await cliVerify(ndjson(lines.slice(0, -3)), 'cut.ndjson');
    expect(cut.code).toBe(1);
    expect(cut.stdout).toContain('truncated');

    // CSV: the same rows, documented columns.
    const csv = await exportOf(KEYS.adminA, '?format=csv');
    expect(csv.status).toBe(200);
    expect(csv.type).toMatch(/^text\/csv/);
    const rows = csv.text.split('\r\n');
    expect(rows[0]).toBe(CSV_COLUMNS.join(','));
    expect(rows.filter((r) => r.startsWith('record,')).length).toBeGreaterThanOrEqual(records.length);
    expect(rows.filter((r) => r.startsWith('checkpoint,')).length).toBeGreaterThanOrEqual(checkpoints.length);
    expect(rows[1]).toContain(`record,tenant_a,1,${records[0].id},`);
    expect(rows[1]).toContain(`,${records[0].hash},${records[0].mac},sha256,,,`);
    // The quoted JSON data cell of a record with commas and quotes.
    expect(csv.text).toContain('""note"":""ünïcødé \\""quoted\\"", comma""');

    // A range: a contiguous part, verified on its own (its first prev_hash is taken on trust unless a checkpoint precedes it).
    const from = records[4].occurred_at;
    const to = records[14].occurred_at;
    const part = await exportOf(KEYS.adminA, `?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`);
    const partLines = parseLines(part.text);
    const partRecords = partLines.filter((l) => l.kind === 'record');
    expect(partRecords[0].seq).toBeLessThanOrEqual(5);
    expect(partRecords[partRecords.length - 1].seq).toBeLessThan(15);
    const partOk = await cliVerify(part.text, 'part.ndjson');
    expect(partOk.code).toBe(0);

    // Bad parameters: the contract's envelope naming the field.
    const bad = await t.call(KEYS.adminA, 'GET', '/v1/admin/audit/export?format=xml');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_request');
    expect(JSON.stringify(bad.body.error.details)).toContain('format');
  });

  it("catches a superuser's rewrite with every later hash recomputed: the server by the mac, offline by the checkpoint signature", async () => {
    await writeRecords(KEYS.adminB, 12);
    const before = parseLines((await exportOf(KEYS.adminB)).text);
    const signed = before.filter((l) => l.kind === 'checkpoint');
    expect(signed.length).toBeGreaterThanOrEqual(1);
    const target = 3;
    // As a superuser with the triggers off: record 3 rewritten, every later hash recomputed (SHA-256 needs no key), head moved along.
    const rows = await db.query(`SELECT ${AUDIT_COLUMNS} FROM audit_records WHERE tenant_id = 'tenant_b' ORDER BY seq`);
    let prev = '';
    await db.transaction(async (m) => {
      await m.query(`SET LOCAL session_replication_role = replica`);
      for (const row of rows) {
        const r = auditRowToDomain(row);
        if (r.seq < target) {
          prev = r.hash;
          continue;
        }
        const { prevHash: _p, hash: _h, mac: _m, ...body } = r;
        const data = r.seq === target ? { ...r.data, forged: true } : r.data;
        const hash = auditRecordHash(prev, { ...body, data });
        await m.query(`UPDATE audit_records SET data = $2::jsonb, prev_hash = $3, hash = $4 WHERE id = $1`, [r.id, JSON.stringify(data), prev, hash]);
        prev = hash;
      }
      await m.query(`UPDATE audit_chain_heads SET last_hash = $1 WHERE tenant_id = 'tenant_b'`, [prev]);
    });
    // The service: the mac of record 3 is not the key's for its new hash.
    const verified = await t.call(KEYS.adminB, 'GET', '/v1/admin/audit/verify');
    expect(verified.body).toEqual({ ok: false, checked: target - 1, first_broken: { id: rows[target - 1].id, seq: target, reason: 'mac_mismatch' } });
    // The export: the hashes recompute; the first checkpoint after record 3 signed another hash.
    const after = await exportOf(KEYS.adminB, `?to=${encodeURIComponent(new Date().toISOString())}`);
    const firstSigned = signed[0].seq;
    const offline = await cliVerify(after.text, 'rewritten.ndjson');
    expect(offline.code).toBe(1);
    expect(offline.stdout).toContain(`checkpoint_mismatch at line`);
    expect(offline.stdout).toContain(`seq ${firstSigned}`);
    expect(offline.stdout).toContain(`a record after seq 0 and at or before seq ${firstSigned} was changed and the chain recomputed`);
    const recipe = await recipeVerify(after.text, 'rewritten-recipe.ndjson');
    expect(recipe.code).not.toBe(0);
    expect(recipe.stderr).toContain(`(seq ${firstSigned}): the chain was rewritten before this checkpoint`);
    // And the checkpointer refuses to sign the rewritten head.
    const cp = await db.query(`SELECT count(*)::int AS n FROM audit_checkpoints WHERE tenant_id = 'tenant_b'`);
    await exportOf(KEYS.adminB);
    await expect(db.query(`SELECT count(*)::int AS n FROM audit_checkpoints WHERE tenant_id = 'tenant_b'`)).resolves.toEqual(cp);
    // Rewriting the checkpoint's hash too: its signature no longer verifies.
    await db.transaction(async (m) => {
      await m.query(`SET LOCAL session_replication_role = replica`);
      const [r] = await m.query(`SELECT hash FROM audit_records WHERE tenant_id = 'tenant_b' AND seq = $1`, [firstSigned]);
      await m.query(`UPDATE audit_checkpoints SET hash = $2 WHERE tenant_id = 'tenant_b' AND seq = $1`, [firstSigned, r.hash]);
    });
    const resigned = await cliVerify((await exportOf(KEYS.adminB, `?to=${encodeURIComponent(new Date().toISOString())}`)).text, 'resigned.ndjson');
    expect(resigned.code).toBe(1);
    expect(resigned.stdout).toContain(`checkpoint_signature_invalid at line`);
  });

  it('prunes only up to a signed checkpoint, which becomes the start: verification still passes; legal hold stops it', async () => {
    const retention = t.app.get(AuditRetention);
    // tenant_a from the first test: 25+ records, checkpoints signed.
    const hold = await t.call(KEYS.adminA, 'PUT', '/v1/admin/audit/legal_hold', { enabled: true });
    expect(hold).toMatchObject({ status: 200, body: { object: 'audit_legal_hold', enabled: true, updated_by: 'admin_a' } });
    await expect(t.call(KEYS.adminA, 'GET', '/v1/admin/audit/legal_hold')).resolves.toMatchObject({ body: { enabled: true } });
    await expect(t.call(KEYS.adminA, 'PUT', '/v1/admin/audit/legal_hold', { enabled: 'yes' })).resolves.toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } });
    await expect(retention.pruneTenant('tenant_a', new Date())).resolves.toBe(0);
    await expect(t.call(KEYS.adminA, 'GET', '/v1/admin/audit/status')).resolves.toMatchObject({ body: { first_seq: 1, legal_hold: { enabled: true } } });

    await expect(t.call(KEYS.adminA, 'PUT', '/v1/admin/audit/legal_hold', { enabled: false })).resolves.toMatchObject({ status: 200, body: { enabled: false } });
    const status = (await t.call(KEYS.adminA, 'GET', '/v1/admin/audit/status')).body;
    const signedAt = status.latest_checkpoint.seq;
    expect(signedAt).toBeGreaterThan(10);
    const pruned = await retention.pruneTenant('tenant_a', new Date());
    // Up to the newest checkpoint made before the cutoff, not beyond it.
    expect(pruned).toBe(signedAt);
    const afterPrune = (await t.call(KEYS.adminA, 'GET', '/v1/admin/audit/status')).body;
    expect(afterPrune.first_seq).toBe(signedAt + 1);
    const verified = await t.call(KEYS.adminA, 'GET', '/v1/admin/audit/verify');
    expect(verified.body).toEqual({ ok: true, checked: afterPrune.last_seq - signedAt });
    const exported = parseLines((await exportOf(KEYS.adminA)).text);
    expect(exported[1]).toMatchObject({ kind: 'checkpoint', seq: signedAt });
    expect(exported[2]).toMatchObject({ kind: 'record', seq: signedAt + 1 });
    const offline = await cliVerify(ndjson(exported), 'pruned.ndjson');
    expect(offline.code).toBe(0);
    expect(offline.stdout).not.toContain('taken on trust');
    await expect(recipeVerify(ndjson(exported), 'pruned-recipe.ndjson')).resolves.toMatchObject({ code: 0, stdout: `ok up to seq ${afterPrune.last_seq}\n` });
    // The database itself refuses a prune beyond a signed checkpoint, or any delete outside the function.
    await expect(db.query(`SELECT audit_prune('tenant_a', $1, now(), 10)`, [afterPrune.last_seq + 1000])).rejects.toThrow(/no signed checkpoint/);
    await expect(db.query(`DELETE FROM audit_records WHERE tenant_id = 'tenant_a'`)).rejects.toThrow(/append-only/);
  });
});
