import { createHash } from 'node:crypto';
import { DataSource } from 'typeorm';
import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { ConcurrencyConflict } from '../../src/common/errors/domain-error';
import { Attachment } from '../../src/modules/attachments/domain/attachment.aggregate';
import { AttachmentRepository } from '../../src/modules/attachments/domain/attachment.repository';
import { BlobIntegrityError, BlobStore, BlobTooLargeError, readAll } from '../../src/modules/attachments/domain/blob-store';
import { BLOB_CHUNK_BYTES } from '../../src/modules/attachments/infrastructure/database.blob-store';
import { startTestApp, TestApp } from '../helpers/test-app';

jest.setTimeout(60_000);

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
async function* pieces(buf: Buffer, size: number): AsyncIterable<Buffer> {
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
}

describe('attachments storage (integration)', () => {
  let t: TestApp;
  let repo: AttachmentRepository;
  let blobs: BlobStore;
  let ds: DataSource;
  beforeAll(async () => {
    t = await startTestApp({ WORKER_ENABLED: 'false' });
    repo = t.app.get(AttachmentRepository);
    blobs = t.app.get(BlobStore);
    ds = t.app.get(DataSource);
  });
  afterAll(async () => {
    await t.close();
  });

  let n = 0;
  async function scanningAttachment(): Promise<Attachment> {
    const a = Attachment.begin({
      id: `att_01JD2Z4Q8M3K7P6W9X0Y1Z2A${String(10 + n++).padStart(2, '0')}`,
      tenantId: 'tenant_a',
      subjectId: 'user_a1',
      filename: 'x.txt',
      declaredType: null,
      purpose: 'agent_input',
      storageKey: `blob_it_${n}`,
      ttlMs: 60_000,
      now: new Date(),
    });
    await repo.insert(a);
    const loaded = (await repo.findById(a.id))!;
    loaded.completeUpload({ sizeBytes: 1, sha256: 'b'.repeat(64) }, new Date());
    loaded.startScan(new Date());
    await repo.save(loaded);
    return (await repo.findById(a.id))!;
  }

  it('given two writers at one version, then exactly one wins and the other gets ConcurrencyConflict', async () => {
    const a = await scanningAttachment();
    const first = (await repo.findById(a.id))!;
    const second = (await repo.findById(a.id))!;
    first.markReady('text/plain', new Date());
    second.reject('executable', null, new Date());
    await expect(repo.save(first)).resolves.toBeUndefined();
    await expect(repo.save(second)).rejects.toBeInstanceOf(ConcurrencyConflict);
    await expect(repo.findById(a.id)).resolves.toMatchObject({ status: 'ready', version: 3 });
  });

  it('given concurrent scan claims, then each attachment is claimed once until its lease passes', async () => {
    const a = await scanningAttachment();
    const b = await scanningAttachment();
    const claims = await Promise.all([repo.claimForScan(60_000), repo.claimForScan(60_000), repo.claimForScan(60_000)]);
    const ids = claims.filter((c) => c !== null).map((c) => c!.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(expect.arrayContaining([a.id, b.id]));
    await expect(repo.claimForScan(60_000)).resolves.toBeNull();
    // A lapsed lease (crashed node) makes it claimable again, with the attempt counted.
    await ds.query(`UPDATE attachments SET scan_lease_until = now() - interval '1 second' WHERE id = $1`, [a.id]);
    await expect(repo.claimForScan(60_000)).resolves.toEqual({ id: a.id, attempts: 2 });
  });

  it('stores content in chunks and verifies size and sha256 on read', async () => {
    const content = Buffer.alloc(BLOB_CHUNK_BYTES * 2 + 1234);
    for (let i = 0; i < content.length; i++) content[i] = (i * 31) & 0xff;
    const stored = await blobs.write('blob_roundtrip', { tenantId: 'tenant_a' }, pieces(content, 10_000), 10 * 1024 * 1024);
    expect(stored).toEqual({ sizeBytes: content.length, sha256: sha(content) });
    const rows = await ds.query(`SELECT seq, length(data) AS len FROM attachment_blobs WHERE storage_key = 'blob_roundtrip' ORDER BY seq`);
    expect(rows.map((r: { len: number }) => Number(r.len))).toEqual([BLOB_CHUNK_BYTES, BLOB_CHUNK_BYTES, 1234]);
    await expect(readAll(blobs, 'blob_roundtrip', stored).then(sha)).resolves.toBe(sha(content));

    // Tampered bytes, a missing chunk, or a wrong expectation: the read fails.
    await expect(readAll(blobs, 'blob_roundtrip', { ...stored, sha256: 'c'.repeat(64) })).rejects.toBeInstanceOf(BlobIntegrityError);
    await expect(readAll(blobs, 'blob_roundtrip', { ...stored, sizeBytes: stored.sizeBytes - 1 })).rejects.toBeInstanceOf(BlobIntegrityError);
    await ds.query(`UPDATE attachment_blobs SET data = overlay(data placing '\\xff'::bytea from 1 for 1) WHERE storage_key = 'blob_roundtrip' AND seq = 1`);
    await expect(readAll(blobs, 'blob_roundtrip', stored)).rejects.toBeInstanceOf(BlobIntegrityError);
    await ds.query(`DELETE FROM attachment_blobs WHERE storage_key = 'blob_roundtrip' AND seq = 2`);
    await expect(readAll(blobs, 'blob_roundtrip', stored)).rejects.toBeInstanceOf(BlobIntegrityError);
    await blobs.delete('blob_roundtrip');
  });

  it('refuses content over the limit and leaves no chunk behind', async () => {
    await expect(blobs.write('blob_big', { tenantId: 'tenant_a' }, pieces(Buffer.alloc(BLOB_CHUNK_BYTES * 3), 65_536), BLOB_CHUNK_BYTES * 2)).rejects.toBeInstanceOf(
      BlobTooLargeError,
    );
    const rows = await ds.query(`SELECT count(*)::int AS n FROM attachment_blobs WHERE storage_key = 'blob_big'`);
    expect(Number(rows[0].n)).toBe(0);
  });

  it('joins the caller transaction: a rolled-back delete keeps the content', async () => {
    const stored = await blobs.write('blob_tx', { tenantId: 'tenant_a' }, pieces(Buffer.from('keep me'), 3), 1024);
    const uow = t.app.get(UnitOfWork);
    await expect(
      uow.run(async () => {
        await blobs.delete('blob_tx');
        throw new Error('rollback');
      }),
    ).rejects.toThrow('rollback');
    await expect(readAll(blobs, 'blob_tx', stored)).resolves.toEqual(Buffer.from('keep me'));
  });
});
