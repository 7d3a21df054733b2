import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Principal } from '../../../common/auth/principal';
import { AppConfig } from '../../../common/config/app-config';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { DomainError } from '../../../common/errors/domain-error';
import { newId } from '../../../common/ids/ids';
import { Attachment, AttachmentPurpose } from '../domain/attachment.aggregate';
import { AttachmentRepository } from '../domain/attachment.repository';
import { BlobStore, BlobTooLargeError } from '../domain/blob-store';
import { sanitizeFilename } from '../domain/filename';
import { AttachmentScanWorker } from './attachment-scan.worker';

/** An upload whose bytes are stored, not yet committed as `scanning`. */
export interface ReceivedUpload {
  id: string;
  storageKey: string;
  filename: string;
  sizeBytes: number;
  sha256: string;
}

/** Raised by the HTTP layer's stream when the multipart file went over the size cap. */
export class UploadTooLarge extends Error {
  constructor() {
    super('the uploaded file is larger than allowed');
    this.name = 'UploadTooLarge';
  }
}

export function payloadTooLarge(maxBytes: number): DomainError {
  return new DomainError('payload_too_large', `the file is larger than ${maxBytes} bytes`, { max_bytes: maxBytes });
}

const MEDIA_TYPE_RE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

/**
 * The upload use case, in three steps around the idempotency check (whose fingerprint needs the
 * content's sha256): `receive` streams the bytes into the blob store under a row in `uploading`;
 * `finalize` (inside the idempotent transaction) moves it to `scanning`; `discardIfUnfinished`
 * removes row and bytes when the request ends any other way (too large, invalid, replayed).
 */
@Injectable()
export class AttachmentUploads {
  constructor(
    private readonly repo: AttachmentRepository,
    private readonly blobs: BlobStore,
    private readonly uow: UnitOfWork,
    private readonly config: AppConfig,
    private readonly scanWorker: AttachmentScanWorker,
  ) {}

  async receive(principal: Principal, input: { filename: string | undefined; declaredType: string | undefined; content: AsyncIterable<Buffer> }): Promise<ReceivedUpload> {
    const declared = (input.declaredType ?? '').toLowerCase().split(';')[0].trim();
    const attachment = Attachment.begin({
      id: newId('att'),
      tenantId: principal.tenantId,
      subjectId: principal.subjectId,
      filename: sanitizeFilename(input.filename),
      declaredType: MEDIA_TYPE_RE.test(declared) ? declared : null,
      purpose: 'agent_input',
      // Generated, unrelated to the client's name or the public id.
      storageKey: `blob_${randomUUID()}`,
      ttlMs: this.config.attachmentTtlHours * 3_600_000,
      now: new Date(),
    });
    await this.repo.insert(attachment);
    try {
      const stored = await this.blobs.write(attachment.storageKey, attachment.owner, input.content, this.config.attachmentMaxBytes);
      return { id: attachment.id, storageKey: attachment.storageKey, filename: attachment.snapshot().filename, ...stored };
    } catch (err) {
      await this.repo.deleteIfUploading(attachment.id).catch(() => undefined);
      if (err instanceof BlobTooLargeError || err instanceof UploadTooLarge) throw payloadTooLarge(this.config.attachmentMaxBytes);
      throw err;
    }
  }

  /** Runs inside the caller's transaction: the upload becomes `scanning`; the scan starts after commit. */
  async finalize(upload: ReceivedUpload, purpose: AttachmentPurpose): Promise<Attachment> {
    const attachment = await this.repo.findById(upload.id);
    if (!attachment || attachment.status !== 'uploading') throw new Error(`upload ${upload.id} is no longer in progress`);
    const now = new Date();
    attachment.completeUpload({ sizeBytes: upload.sizeBytes, sha256: upload.sha256, purpose }, now);
    attachment.startScan(now);
    await this.repo.save(attachment);
    this.uow.afterCommit(() => this.scanWorker.kick());
    return attachment;
  }

  /** Removes an upload that did not reach `scanning` (a no-op once it did). */
  async discardIfUnfinished(upload: { id: string; storageKey: string }): Promise<void> {
    if (await this.repo.deleteIfUploading(upload.id)) await this.blobs.delete(upload.storageKey);
  }
}
