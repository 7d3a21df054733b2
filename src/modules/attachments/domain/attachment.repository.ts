import { Attachment } from './attachment.aggregate';

/** Port: persistence of the Attachment aggregate. Writes are conditional on the loaded version. */
export abstract class AttachmentRepository {
  abstract insert(attachment: Attachment): Promise<void>;
  /** Throws `ConcurrencyConflict` when the row moved since it was loaded. */
  abstract save(attachment: Attachment): Promise<void>;
  abstract findById(id: string): Promise<Attachment | null>;
  abstract findByIds(ids: string[]): Promise<Attachment[]>;
  /** Removes an upload that never completed (only while still `uploading`). True if it did. */
  abstract deleteIfUploading(id: string): Promise<boolean>;
  /** Claims one `scanning` attachment for `leaseMs` (SKIP LOCKED: safe with several nodes). */
  abstract claimForScan(leaseMs: number): Promise<{ id: string; attempts: number } | null>;
  abstract releaseScanLease(id: string): Promise<void>;
  /** Ids of `ready` attachments whose `expires_at` has passed. */
  abstract findExpired(now: Date, limit: number): Promise<string[]>;
  /** Ids of uploads still `uploading` that started before `before` (their transfer died). */
  abstract findStaleUploads(before: Date, limit: number): Promise<string[]>;
}
