import { DomainError } from '../../../common/errors/domain-error';

export type AttachmentStatus = 'uploading' | 'uploaded' | 'scanning' | 'ready' | 'rejected' | 'failed' | 'expired' | 'deleted';

export const ATTACHMENT_PURPOSES = ['agent_input'] as const;
export type AttachmentPurpose = (typeof ATTACHMENT_PURPOSES)[number];

/**
 * The legal moves of CONTRACT section 11. `deleted` is also reachable from the other states in
 * which nothing happens any more (rejected, failed, expired), so an owner can remove what it no
 * longer wants; a transfer or a scan in flight cannot be deleted.
 */
const MOVES: Record<AttachmentStatus, readonly AttachmentStatus[]> = {
  uploading: ['uploaded', 'failed'],
  uploaded: ['scanning'],
  scanning: ['ready', 'rejected'],
  ready: ['expired', 'deleted'],
  rejected: ['deleted'],
  failed: ['deleted'],
  expired: ['deleted'],
  deleted: [],
};

export function canMove(from: AttachmentStatus, to: AttachmentStatus): boolean {
  return MOVES[from].includes(to);
}

export interface AttachmentProps {
  id: string;
  tenantId: string;
  subjectId: string;
  filename: string;
  /** The client's hint until the scan, then the type detected from the content. */
  mediaType: string;
  declaredType: string | null;
  sizeBytes: number;
  sha256: string | null;
  status: AttachmentStatus;
  purpose: AttachmentPurpose;
  rejectionReason: string | null;
  storageKey: string;
  version: number;
  expiresAt: Date;
  createdAt: Date;
  updatedAt: Date;
}

export type AttachmentDomainEvent =
  | { type: 'attachment.upload_started'; attachmentId: string }
  | { type: 'attachment.uploaded'; attachmentId: string; sizeBytes: number; sha256: string }
  | { type: 'attachment.scan_started'; attachmentId: string }
  | { type: 'attachment.ready'; attachmentId: string; mediaType: string }
  | { type: 'attachment.rejected'; attachmentId: string; reason: string }
  | { type: 'attachment.failed'; attachmentId: string; reason: string }
  | { type: 'attachment.expired'; attachmentId: string }
  | { type: 'attachment.deleted'; attachmentId: string };

/** How long a client should wait before asking again about an attachment still being scanned. */
export const NOT_READY_RETRY_AFTER_MS = 500;

/** Thrown on a move the state machine does not allow: a programming error, never a client's. */
export class IllegalAttachmentTransition extends Error {
  constructor(
    readonly from: AttachmentStatus,
    readonly to: AttachmentStatus,
  ) {
    super(`attachment cannot move from ${from} to ${to}`);
    this.name = 'IllegalAttachmentTransition';
  }
}

/**
 * The Attachment aggregate: the upload / scan / availability state machine. Every committed
 * change increments `version` by one; the repository writes conditionally on the loaded version.
 */
export class Attachment {
  private props: AttachmentProps;
  private readonly loadedVersion: number;
  private events: AttachmentDomainEvent[] = [];

  private constructor(props: AttachmentProps, loadedVersion: number) {
    this.props = props;
    this.loadedVersion = loadedVersion;
  }

  /** A new upload: the row exists while the bytes stream in. */
  static begin(input: {
    id: string;
    tenantId: string;
    subjectId: string;
    filename: string;
    declaredType: string | null;
    purpose: AttachmentPurpose;
    storageKey: string;
    ttlMs: number;
    now: Date;
  }): Attachment {
    const a = new Attachment(
      {
        id: input.id,
        tenantId: input.tenantId,
        subjectId: input.subjectId,
        filename: input.filename,
        mediaType: input.declaredType ?? 'application/octet-stream',
        declaredType: input.declaredType,
        sizeBytes: 0,
        sha256: null,
        status: 'uploading',
        purpose: input.purpose,
        rejectionReason: null,
        storageKey: input.storageKey,
        version: 1,
        expiresAt: new Date(input.now.getTime() + input.ttlMs),
        createdAt: input.now,
        updatedAt: input.now,
      },
      0,
    );
    a.events.push({ type: 'attachment.upload_started', attachmentId: input.id });
    return a;
  }

  static restore(props: AttachmentProps): Attachment {
    return new Attachment({ ...props }, props.version);
  }

  get id(): string {
    return this.props.id;
  }
  get status(): AttachmentStatus {
    return this.props.status;
  }
  get storageKey(): string {
    return this.props.storageKey;
  }
  get owner(): { tenantId: string; subjectId: string } {
    return { tenantId: this.props.tenantId, subjectId: this.props.subjectId };
  }
  get version(): number {
    return this.props.version;
  }
  /** The version the aggregate had when loaded: the condition of the next write. */
  get expectedVersion(): number {
    return this.loadedVersion;
  }
  get isNew(): boolean {
    return this.loadedVersion === 0;
  }
  get isDirty(): boolean {
    return this.props.version !== this.loadedVersion;
  }
  snapshot(): Readonly<AttachmentProps> {
    return { ...this.props };
  }
  /** The events recorded since the aggregate was loaded (not consumed: see `pullEvents`). */
  get recordedEvents(): readonly AttachmentDomainEvent[] {
    return this.events;
  }
  pullEvents(): AttachmentDomainEvent[] {
    const out = this.events;
    this.events = [];
    return out;
  }

  /** All bytes are stored: size and digest are now fixed. */
  completeUpload(input: { sizeBytes: number; sha256: string; purpose?: AttachmentPurpose }, now: Date): void {
    if (!Number.isSafeInteger(input.sizeBytes) || input.sizeBytes < 0) throw new Error('size must be a non-negative integer');
    if (!/^[0-9a-f]{64}$/.test(input.sha256)) throw new Error('sha256 must be 64 lowercase hex digits');
    this.move('uploaded', now);
    this.props.sizeBytes = input.sizeBytes;
    this.props.sha256 = input.sha256;
    if (input.purpose) this.props.purpose = input.purpose;
    this.events.push({ type: 'attachment.uploaded', attachmentId: this.props.id, sizeBytes: input.sizeBytes, sha256: input.sha256 });
  }

  startScan(now: Date): void {
    this.move('scanning', now);
    this.events.push({ type: 'attachment.scan_started', attachmentId: this.props.id });
  }

  /** The scan found nothing: the content is available until `expiresAt`. */
  markReady(mediaType: string, now: Date): void {
    this.move('ready', now);
    this.props.mediaType = mediaType;
    this.events.push({ type: 'attachment.ready', attachmentId: this.props.id, mediaType });
  }

  reject(reason: string, detectedType: string | null, now: Date): void {
    this.move('rejected', now);
    this.props.rejectionReason = reason;
    if (detectedType) this.props.mediaType = detectedType;
    this.events.push({ type: 'attachment.rejected', attachmentId: this.props.id, reason });
  }

  /** The transfer never completed (client gone, node crashed). */
  fail(reason: string, now: Date): void {
    this.move('failed', now);
    this.props.rejectionReason = reason;
    this.events.push({ type: 'attachment.failed', attachmentId: this.props.id, reason });
  }

  /** Only once `expiresAt` has passed. */
  expire(now: Date): void {
    if (now.getTime() < this.props.expiresAt.getTime()) throw new Error(`attachment ${this.props.id} does not expire before ${this.props.expiresAt.toISOString()}`);
    this.move('expired', now);
    this.events.push({ type: 'attachment.expired', attachmentId: this.props.id });
  }

  /** The owner removes it. A transfer or scan in flight answers 409 `attachment_not_ready` (retry). */
  delete(now: Date): void {
    if (this.props.status === 'uploading' || this.props.status === 'uploaded' || this.props.status === 'scanning') throw this.notReadyError();
    this.move('deleted', now);
    this.events.push({ type: 'attachment.deleted', attachmentId: this.props.id });
  }

  /** Whether a run may use it: the contract errors for everything but `ready`. */
  assertUsable(): void {
    switch (this.props.status) {
      case 'ready':
        return;
      case 'uploading':
      case 'uploaded':
      case 'scanning':
        throw this.notReadyError();
      case 'expired':
        throw new DomainError('attachment_expired', 'the attachment has expired', { attachment_id: this.props.id, current_status: 'expired' });
      case 'rejected':
      case 'failed':
        throw new DomainError('attachment_rejected', 'the attachment was rejected', {
          attachment_id: this.props.id,
          current_status: this.props.status,
          rejection_reason: this.props.rejectionReason,
        });
      case 'deleted':
        throw attachmentNotFound(this.props.id);
      default: {
        const never: never = this.props.status;
        throw new Error(`unknown status ${String(never)}`);
      }
    }
  }

  private notReadyError(): DomainError {
    return new DomainError('attachment_not_ready', 'the attachment is still being uploaded or scanned', {
      attachment_id: this.props.id,
      current_status: this.props.status,
      retry_after_ms: NOT_READY_RETRY_AFTER_MS,
    });
  }

  private move(to: AttachmentStatus, now: Date): void {
    const from = this.props.status;
    if (!canMove(from, to)) throw new IllegalAttachmentTransition(from, to);
    this.props.status = to;
    // One committed change = one version, however many moves the command made.
    this.props.version = this.loadedVersion + 1;
    this.props.updatedAt = now;
  }
}

export function attachmentNotFound(id: string): DomainError {
  return new DomainError('attachment_not_found', 'attachment not found', { attachment_id: id });
}
