/** Raised when stored bytes no longer match the recorded size or sha256. */
export class BlobIntegrityError extends Error {
  constructor(
    readonly storageKey: string,
    detail: string,
  ) {
    super(`blob ${storageKey} failed verification: ${detail}`);
    this.name = 'BlobIntegrityError';
  }
}

/** Raised while writing when the content grows past the allowed size. */
export class BlobTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`content exceeds ${maxBytes} bytes`);
    this.name = 'BlobTooLargeError';
  }
}

export interface StoredBlob {
  sizeBytes: number;
  /** Lowercase hex SHA-256 of the content. */
  sha256: string;
}

/**
 * Port: content storage that every node of a cluster reads and writes. Content is streamed in
 * and out (never held whole); size and sha256 are computed while writing and verified on read.
 */
export abstract class BlobStore {
  /** Streams `source` into storage under `storageKey`; on any error nothing is left behind. */
  abstract write(storageKey: string, owner: { tenantId: string }, source: AsyncIterable<Buffer>, maxBytes: number): Promise<StoredBlob>;
  /**
   * Streams the content back. After the last chunk the size and sha256 are checked against
   * `expected`; a mismatch makes the iteration throw `BlobIntegrityError`.
   */
  abstract read(storageKey: string, expected: StoredBlob): AsyncIterable<Buffer>;
  abstract delete(storageKey: string): Promise<void>;
}

/** Reads a whole (verified) blob into memory: only for content already bounded in size. */
export async function readAll(store: BlobStore, storageKey: string, expected: StoredBlob): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of store.read(storageKey, expected)) parts.push(chunk);
  return Buffer.concat(parts);
}
