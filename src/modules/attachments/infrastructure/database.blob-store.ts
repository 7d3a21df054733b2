import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { BlobIntegrityError, BlobStore, BlobTooLargeError, StoredBlob } from '../domain/blob-store';

/** Size of one stored chunk (one row of `attachment_blobs`). */
export const BLOB_CHUNK_BYTES = 256 * 1024;

/**
 * Blobs in the database, as `bytea` chunks of 256 KiB: every node of a cluster reads what any
 * node wrote, with no shared filesystem, and the embedded database works the same way. A write
 * holds at most one chunk in memory; each chunk is its own short statement (no transaction spans
 * the upload), and a failed write removes what it stored.
 */
@Injectable()
export class DatabaseBlobStore extends BlobStore {
  constructor(private readonly uow: UnitOfWork) {
    super();
  }

  async write(storageKey: string, owner: { tenantId: string }, source: AsyncIterable<Buffer>, maxBytes: number): Promise<StoredBlob> {
    const hash = createHash('sha256');
    let size = 0;
    let seq = 0;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const flush = async (buf: Buffer) => {
      await this.uow.manager.query(`INSERT INTO attachment_blobs (storage_key, seq, tenant_id, data) VALUES ($1, $2, $3, $4)`, [
        storageKey,
        seq++,
        owner.tenantId,
        buf,
      ]);
    };
    try {
      for await (const chunk of source) {
        size += chunk.length;
        if (size > maxBytes) throw new BlobTooLargeError(maxBytes);
        hash.update(chunk);
        pending.push(chunk);
        pendingBytes += chunk.length;
        while (pendingBytes >= BLOB_CHUNK_BYTES) {
          const all = Buffer.concat(pending, pendingBytes);
          await flush(all.subarray(0, BLOB_CHUNK_BYTES));
          const rest = all.subarray(BLOB_CHUNK_BYTES);
          pending = rest.length ? [Buffer.from(rest)] : [];
          pendingBytes = rest.length;
        }
      }
      if (pendingBytes > 0) await flush(Buffer.concat(pending, pendingBytes));
    } catch (err) {
      await this.delete(storageKey).catch(() => undefined);
      throw err;
    }
    return { sizeBytes: size, sha256: hash.digest('hex') };
  }

  async *read(storageKey: string, expected: StoredBlob): AsyncIterable<Buffer> {
    const hash = createHash('sha256');
    let size = 0;
    for (let seq = 0; ; seq++) {
      // One short statement per chunk: no cursor, no transaction, no connection held between chunks.
      const rows: Array<{ data: Buffer }> = await this.uow.manager.query(`SELECT data FROM attachment_blobs WHERE storage_key = $1 AND seq = $2`, [
        storageKey,
        seq,
      ]);
      if (rows.length === 0) break;
      const data = rows[0].data;
      size += data.length;
      if (size > expected.sizeBytes) throw new BlobIntegrityError(storageKey, `more than ${expected.sizeBytes} bytes stored`);
      hash.update(data);
      if (size === expected.sizeBytes) {
        // Verify before handing over the last bytes, so a consumer never completes on bad content.
        const digest = hash.digest('hex');
        if (digest !== expected.sha256) throw new BlobIntegrityError(storageKey, 'sha256 mismatch');
        yield data;
        const extra: Array<{ n: number }> = await this.uow.manager.query(
          `SELECT 1 AS n FROM attachment_blobs WHERE storage_key = $1 AND seq = $2`,
          [storageKey, seq + 1],
        );
        if (extra.length > 0) throw new BlobIntegrityError(storageKey, `more than ${expected.sizeBytes} bytes stored`);
        return;
      }
      yield data;
    }
    if (size === expected.sizeBytes && hash.digest('hex') === expected.sha256) return; // empty content
    throw new BlobIntegrityError(storageKey, `${size} of ${expected.sizeBytes} bytes stored`);
  }

  async delete(storageKey: string): Promise<void> {
    await this.uow.manager.query(`DELETE FROM attachment_blobs WHERE storage_key = $1`, [storageKey]);
  }
}
