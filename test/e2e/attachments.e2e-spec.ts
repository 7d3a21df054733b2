import { createHash, randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { AttachmentReader } from '../../src/modules/agents/domain/tool';
import { AttachmentExpirySweeper } from '../../src/modules/attachments/application/attachment-expiry.sweeper';
import { AttachmentReferenceChecker } from '../../src/modules/attachments/application/attachment-reference.checker';
import { AttachmentScanWorker } from '../../src/modules/attachments/application/attachment-scan.worker';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

jest.setTimeout(60_000);

const EICAR = 'X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*';
// A valid 1x1 PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);
const ELF = Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x00]), Buffer.alloc(120)]);
const MZ = Buffer.concat([Buffer.from('MZ'), Buffer.alloc(58), Buffer.from([0x80, 0, 0, 0]), Buffer.alloc(64), Buffer.from('PE\0\0'), Buffer.alloc(64)]);

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

interface Upload {
  bytes: Buffer | string;
  filename: string;
  type?: string;
  purpose?: string;
}

async function upload(t: TestApp, key: string, u: Upload, idempotencyKey: string | null = randomUUID()) {
  const form = new FormData();
  if (u.purpose !== undefined) form.append('purpose', u.purpose);
  form.append('file', new Blob([typeof u.bytes === 'string' ? Buffer.from(u.bytes) : u.bytes], { type: u.type ?? 'application/octet-stream' }), u.filename);
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (idempotencyKey !== null) headers['idempotency-key'] = idempotencyKey;
  const res = await fetch(`${t.url}/v1/attachments`, { method: 'POST', headers, body: form });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
}

async function settle(t: TestApp, key: string, id: string): Promise<any> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const r = await t.call(key, 'GET', `/v1/attachments/${id}`);
    expect(r.status).toBe(200);
    if (!['uploading', 'uploaded', 'scanning'].includes(r.body.status)) return r.body;
    if (Date.now() > deadline) throw new Error(`attachment ${id} still ${r.body.status}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

async function uploadAndSettle(t: TestApp, key: string, u: Upload) {
  const r = await upload(t, key, u);
  expect(r.status).toBe(202);
  return settle(t, key, r.body.id);
}

describe('attachments (e2e, real multipart uploads)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('uploads, scans in the background and serves a text file (ready round trip with sha256)', async () => {
    const bytes = Buffer.from('hello attachments\nsecond line ✓\n');
    const r = await upload(t, KEYS.memberA1, { bytes, filename: 'notes.txt', type: 'text/plain' });
    expect(r.status).toBe(202);
    expect(r.headers.get('location')).toBe(`/v1/attachments/${r.body.id}`);
    expect(r.body).toMatchObject({
      object: 'attachment',
      filename: 'notes.txt',
      status: 'scanning',
      purpose: 'agent_input',
      size_bytes: bytes.length,
      sha256: sha256(bytes),
      rejection_reason: null,
    });
    expect(r.body.id).toMatch(/^att_[0-9A-Z]{26}$/);
    const done = await settle(t, KEYS.memberA1, r.body.id);
    expect(done).toMatchObject({ status: 'ready', media_type: 'text/plain', sha256: sha256(bytes), size_bytes: bytes.length });

    const c = await fetch(`${t.url}/v1/attachments/${r.body.id}/content`, { headers: { authorization: `Bearer ${KEYS.memberA1}` } });
    expect(c.status).toBe(200);
    const got = Buffer.from(await c.arrayBuffer());
    expect(sha256(got)).toBe(sha256(bytes));
    expect(c.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(c.headers.get('content-length')).toBe(String(bytes.length));
    expect(c.headers.get('x-content-type-options')).toBe('nosniff');
    expect(c.headers.get('content-disposition')).toBe(`attachment; filename="notes.txt"; filename*=UTF-8''notes.txt`);
  });

  it('round-trips a binary image larger than one storage chunk', async () => {
    // A PNG header followed by 600 KiB of data: three chunks of 256 KiB in storage.
    const big = Buffer.concat([PNG, Buffer.alloc(600 * 1024, 7)]);
    const done = await uploadAndSettle(t, KEYS.memberA1, { bytes: big, filename: 'big.png', type: 'image/png' });
    expect(done).toMatchObject({ status: 'ready', media_type: 'image/png', size_bytes: big.length, sha256: sha256(big) });
    const c = await fetch(`${t.url}/v1/attachments/${done.id}/content`, { headers: { authorization: `Bearer ${KEYS.memberA1}` } });
    expect(c.status).toBe(200);
    expect(c.headers.get('content-type')).toBe('image/png');
    expect(sha256(Buffer.from(await c.arrayBuffer()))).toBe(sha256(big));
  });

  it('rejects the EICAR test signature', async () => {
    const done = await uploadAndSettle(t, KEYS.memberA1, { bytes: EICAR, filename: 'eicar.txt', type: 'text/plain' });
    expect(done).toMatchObject({ status: 'rejected', rejection_reason: 'malware_detected' });
    const c = await t.call(KEYS.memberA1, 'GET', `/v1/attachments/${done.id}/content`);
    expect(c.status).toBe(422);
    expect(c.body.error).toMatchObject({ code: 'attachment_rejected', details: { rejection_reason: 'malware_detected' } });
  });

  it.each([
    ['an ELF binary', ELF],
    ['a PE/MZ binary', MZ],
  ])('rejects %s renamed .png as an executable', async (_name, bytes) => {
    const done = await uploadAndSettle(t, KEYS.memberA1, { bytes, filename: 'cute-cat.png', type: 'image/png' });
    expect(done).toMatchObject({ status: 'rejected', rejection_reason: 'executable' });
  });

  it('rejects a PNG named .pdf (type and extension disagree)', async () => {
    const done = await uploadAndSettle(t, KEYS.memberA1, { bytes: PNG, filename: 'report.pdf', type: 'application/pdf' });
    expect(done).toMatchObject({ status: 'rejected', rejection_reason: 'type_mismatch', media_type: 'image/png' });
  });

  it('sanitises a path-traversal filename', async () => {
    const r = await upload(t, KEYS.memberA1, { bytes: 'root:x:0:0', filename: '../../etc/passwd.txt', type: 'text/plain' });
    expect(r.status).toBe(202);
    expect(r.body.filename).toBe('passwd.txt');
    const done = await settle(t, KEYS.memberA1, r.body.id);
    expect(done).toMatchObject({ status: 'ready', filename: 'passwd.txt' });
  });

  it('requires an Idempotency-Key (400 idempotency_key_required) and stores nothing', async () => {
    const ds = t.app.get(DataSource);
    const before = Number((await ds.query(`SELECT count(*)::int AS n FROM attachments`))[0].n);
    const r = await upload(t, KEYS.memberA1, { bytes: 'x', filename: 'a.txt' }, null);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('idempotency_key_required');
    const after = Number((await ds.query(`SELECT count(*)::int AS n FROM attachments`))[0].n);
    expect(after).toBe(before);
  });

  it('replays the same upload under the same key and refuses another file under it', async () => {
    const key = randomUUID();
    const ds = t.app.get(DataSource);
    const first = await upload(t, KEYS.memberA1, { bytes: 'same content', filename: 'same.txt' }, key);
    expect(first.status).toBe(202);
    const again = await upload(t, KEYS.memberA1, { bytes: 'same content', filename: 'same.txt' }, key);
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
    const other = await upload(t, KEYS.memberA1, { bytes: 'other content', filename: 'same.txt' }, key);
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('idempotency_conflict');
    // The replayed and the refused upload left nothing behind.
    const rows = await ds.query(`SELECT count(*)::int AS n FROM attachments WHERE filename = 'same.txt'`);
    expect(Number(rows[0].n)).toBe(1);
    await settle(t, KEYS.memberA1, first.body.id);
  });

  it('answers 404 to everyone but the owner (and admins of its tenant)', async () => {
    const done = await uploadAndSettle(t, KEYS.memberA1, { bytes: 'private', filename: 'private.txt' });
    for (const key of [KEYS.memberA2, KEYS.adminB, KEYS.memberB]) {
      for (const path of [`/v1/attachments/${done.id}`, `/v1/attachments/${done.id}/content`]) {
        const r = await t.call(key, 'GET', path);
        expect(r.status).toBe(404);
        expect(r.body.error.code).toBe('attachment_not_found');
      }
      const d = await t.call(key, 'DELETE', `/v1/attachments/${done.id}`);
      expect(d.status).toBe(404);
    }
    const missing = await t.call(KEYS.memberA1, 'GET', `/v1/attachments/att_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B`);
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('attachment_not_found');
    const admin = await t.call(KEYS.adminA, 'GET', `/v1/attachments/${done.id}`);
    expect(admin.status).toBe(200);
  });

  it('deletes: 204, content removed, then 404', async () => {
    const done = await uploadAndSettle(t, KEYS.memberA1, { bytes: 'to delete', filename: 'gone.txt' });
    const ds = t.app.get(DataSource);
    const [{ storage_key }] = await ds.query(`SELECT storage_key FROM attachments WHERE id = $1`, [done.id]);
    const d = await t.call(KEYS.memberA1, 'DELETE', `/v1/attachments/${done.id}`);
    expect(d.status).toBe(204);
    expect((await t.call(KEYS.memberA1, 'GET', `/v1/attachments/${done.id}`)).status).toBe(404);
    expect((await t.call(KEYS.memberA1, 'GET', `/v1/attachments/${done.id}/content`)).status).toBe(404);
    expect((await t.call(KEYS.memberA1, 'DELETE', `/v1/attachments/${done.id}`)).status).toBe(404);
    const blobs = await ds.query(`SELECT count(*)::int AS n FROM attachment_blobs WHERE storage_key = $1`, [storage_key]);
    expect(Number(blobs[0].n)).toBe(0);
  });

  it('expires ready attachments past expires_at (sweeper) and drops their content', async () => {
    const done = await uploadAndSettle(t, KEYS.memberA1, { bytes: 'short lived', filename: 'ttl.txt' });
    const ds = t.app.get(DataSource);
    await ds.query(`UPDATE attachments SET expires_at = now() - interval '1 minute' WHERE id = $1`, [done.id]);
    const swept = await t.app.get(AttachmentExpirySweeper).sweep();
    expect(swept.expired).toBeGreaterThanOrEqual(1);
    const r = await t.call(KEYS.memberA1, 'GET', `/v1/attachments/${done.id}`);
    expect(r.body.status).toBe('expired');
    const c = await t.call(KEYS.memberA1, 'GET', `/v1/attachments/${done.id}/content`);
    expect(c.status).toBe(409);
    expect(c.body.error.code).toBe('attachment_expired');
    const [{ storage_key }] = await ds.query(`SELECT storage_key FROM attachments WHERE id = $1`, [done.id]);
    const blobs = await ds.query(`SELECT count(*)::int AS n FROM attachment_blobs WHERE storage_key = $1`, [storage_key]);
    expect(Number(blobs[0].n)).toBe(0);
    await expect(t.app.get(AttachmentReferenceChecker).assertUsable({ tenantId: 'tenant_a', subjectId: 'user_a1' }, [done.id])).rejects.toMatchObject({
      code: 'attachment_expired',
    });
  });

  it('checks references for runs and reads attachments for the agent', async () => {
    const ok = await uploadAndSettle(t, KEYS.memberA1, { bytes: '{"order":"O-1001","items":[1,2,3]}', filename: 'order.json' });
    expect(ok).toMatchObject({ status: 'ready', media_type: 'application/json' });
    const bad = await uploadAndSettle(t, KEYS.memberA1, { bytes: EICAR, filename: 'bad.txt' });
    const checker = t.app.get(AttachmentReferenceChecker);
    const owner = { tenantId: 'tenant_a', subjectId: 'user_a1' };
    await expect(checker.assertUsable(owner, [ok.id])).resolves.toBeUndefined();
    await expect(checker.assertUsable({ tenantId: 'tenant_a', subjectId: 'user_a2' }, [ok.id])).rejects.toMatchObject({ code: 'attachment_not_found' });
    await expect(checker.assertUsable({ tenantId: 'tenant_b', subjectId: 'user_a1' }, [ok.id])).rejects.toMatchObject({ code: 'attachment_not_found' });
    await expect(checker.assertUsable(owner, [ok.id, bad.id])).rejects.toMatchObject({
      code: 'attachment_rejected',
      details: { rejection_reason: 'malware_detected' },
    });
    const reader = t.app.get(AttachmentReader);
    await expect(reader.read(owner, ok.id, 10)).resolves.toMatchObject({ media_type: 'application/json', text: '{"order":"', truncated: true });
    await expect(reader.read(owner, ok.id, 1000)).resolves.toMatchObject({ text: '{"order":"O-1001","items":[1,2,3]}', truncated: false });
    await expect(reader.read({ tenantId: 'tenant_b', subjectId: 'user_b' }, ok.id, 1000)).rejects.toMatchObject({ code: 'attachment_not_found' });
  });

  it('keeps JSON routes at 415 for multipart bodies and the upload route at 415 for JSON', async () => {
    const form = new FormData();
    form.append('title', 'x');
    const r = await fetch(`${t.url}/v1/sessions`, { method: 'POST', headers: { authorization: `Bearer ${KEYS.memberA1}` }, body: form });
    expect(r.status).toBe(415);
    expect(((await r.json()) as any).error.code).toBe('unsupported_media_type');
    const j = await t.call(KEYS.memberA1, 'POST', '/v1/attachments', { file: 'x' }, { 'idempotency-key': randomUUID() });
    expect(j.status).toBe(415);
  });

  it('validates the form: a file part is required, purpose is checked, unknown fields are refused', async () => {
    const noFile = new FormData();
    noFile.append('purpose', 'agent_input');
    const r1 = await fetch(`${t.url}/v1/attachments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEYS.memberA1}`, 'idempotency-key': randomUUID() },
      body: noFile,
    });
    expect(r1.status).toBe(400);
    expect(((await r1.json()) as any).error.code).toBe('invalid_request');
    const r2 = await upload(t, KEYS.memberA1, { bytes: 'x', filename: 'a.txt', purpose: 'world_domination' });
    expect(r2.status).toBe(400);
    expect(r2.body.error.details.errors[0].field).toBe('purpose');
    const extra = new FormData();
    extra.append('status', 'ready');
    extra.append('file', new Blob([Buffer.from('x')]), 'a.txt');
    const r3 = await fetch(`${t.url}/v1/attachments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEYS.memberA1}`, 'idempotency-key': randomUUID() },
      body: extra,
    });
    expect(r3.status).toBe(400);
    expect(((await r3.json()) as any).error.details.errors[0].field).toBe('status');
  });
});

describe('attachments (e2e): size cap and scan queue', () => {
  let t: TestApp;
  beforeAll(async () => {
    // No background worker: scans happen only when the test drains the queue.
    t = await startTestApp({ ATTACHMENT_MAX_BYTES: '65536', WORKER_ENABLED: 'false' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers 413 payload_too_large over ATTACHMENT_MAX_BYTES and leaves no rows behind', async () => {
    const ds = t.app.get(DataSource);
    const r = await upload(t, KEYS.memberA1, { bytes: Buffer.alloc(1024 * 1024, 0x61), filename: 'huge.txt' });
    expect(r.status).toBe(413);
    expect(r.body.error.code).toBe('payload_too_large');
    expect(Number((await ds.query(`SELECT count(*)::int AS n FROM attachments`))[0].n)).toBe(0);
    expect(Number((await ds.query(`SELECT count(*)::int AS n FROM attachment_blobs`))[0].n)).toBe(0);
    // Exactly at the cap is fine.
    const atCap = await upload(t, KEYS.memberA1, { bytes: Buffer.alloc(65536, 0x61), filename: 'fits.txt' });
    expect(atCap.status).toBe(202);
  });

  it('reports not-ready while scanning, then ready once the worker ran', async () => {
    const r = await upload(t, KEYS.memberA1, { bytes: 'queued', filename: 'queued.md' });
    expect(r.status).toBe(202);
    const c = await t.call(KEYS.memberA1, 'GET', `/v1/attachments/${r.body.id}/content`);
    expect(c.status).toBe(409);
    expect(c.body.error).toMatchObject({ code: 'attachment_not_ready', retryable: true, details: { current_status: 'scanning', retry_after_ms: 500 } });
    const d = await t.call(KEYS.memberA1, 'DELETE', `/v1/attachments/${r.body.id}`);
    expect(d.status).toBe(409);
    await expect(t.app.get(AttachmentReferenceChecker).assertUsable({ tenantId: 'tenant_a', subjectId: 'user_a1' }, [r.body.id])).rejects.toMatchObject({
      code: 'attachment_not_ready',
      details: { current_status: 'scanning', retry_after_ms: 500 },
    });
    await expect(t.app.get(AttachmentScanWorker).drain()).resolves.toBeGreaterThanOrEqual(1);
    const after = await t.call(KEYS.memberA1, 'GET', `/v1/attachments/${r.body.id}`);
    expect(after.body).toMatchObject({ status: 'ready', media_type: 'text/markdown' });
  });
});
