import { DomainError } from '../../../common/errors/domain-error';
import { Attachment, AttachmentStatus, canMove, IllegalAttachmentTransition } from './attachment.aggregate';

const T0 = new Date('2026-11-30T09:00:00.000Z');
const later = (ms: number) => new Date(T0.getTime() + ms);
const SHA = 'a'.repeat(64);
const TTL = 3_600_000;

function begin(): Attachment {
  return Attachment.begin({
    id: 'att_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B',
    tenantId: 'tenant_a',
    subjectId: 'user_a1',
    filename: 'notes.txt',
    declaredType: 'text/plain',
    purpose: 'agent_input',
    storageKey: 'blob_x',
    ttlMs: TTL,
    now: T0,
  });
}

/** An attachment as loaded from storage in the given status. */
function loaded(status: AttachmentStatus): Attachment {
  return Attachment.restore({ ...begin().snapshot(), status, version: 4, sizeBytes: 5, sha256: SHA });
}

function scanning(): Attachment {
  const a = begin();
  a.completeUpload({ sizeBytes: 5, sha256: SHA }, later(1));
  a.startScan(later(1));
  return Attachment.restore(a.snapshot());
}

describe('Attachment', () => {
  it('given a new upload, then it is uploading, version 1, expiring after the TTL', () => {
    const a = begin();
    expect(a.snapshot()).toMatchObject({ status: 'uploading', version: 1, mediaType: 'text/plain', sha256: null, expiresAt: later(TTL) });
    expect(a.isNew).toBe(true);
    expect(a.pullEvents()).toEqual([{ type: 'attachment.upload_started', attachmentId: a.id }]);
  });

  it('given an upload, when completed and scan started, then it is scanning with size and sha256 and one version more', () => {
    const a = Attachment.restore(begin().snapshot());
    a.completeUpload({ sizeBytes: 5, sha256: SHA }, later(10));
    a.startScan(later(10));
    expect(a.snapshot()).toMatchObject({ status: 'scanning', sizeBytes: 5, sha256: SHA, version: 2, updatedAt: later(10) });
    expect(a.expectedVersion).toBe(1);
    expect(a.pullEvents().map((e) => e.type)).toEqual(['attachment.uploaded', 'attachment.scan_started']);
  });

  it('given scanning, when the scan is clean, then it is ready with the detected type', () => {
    const a = scanning();
    a.markReady('text/markdown', later(20));
    expect(a.snapshot()).toMatchObject({ status: 'ready', mediaType: 'text/markdown' });
    expect(a.pullEvents()).toEqual([{ type: 'attachment.ready', attachmentId: a.id, mediaType: 'text/markdown' }]);
    expect(() => a.assertUsable()).not.toThrow();
  });

  it('given scanning, when the scan rejects, then it is rejected with the reason and unusable (422)', () => {
    const a = scanning();
    a.reject('malware_detected', null, later(20));
    expect(a.snapshot()).toMatchObject({ status: 'rejected', rejectionReason: 'malware_detected' });
    expect(a.pullEvents()).toEqual([{ type: 'attachment.rejected', attachmentId: a.id, reason: 'malware_detected' }]);
    expect(() => a.assertUsable()).toThrow(expect.objectContaining({ code: 'attachment_rejected', details: expect.objectContaining({ rejection_reason: 'malware_detected' }) }));
  });

  it('given scanning, then it is not ready (409, retryable) and cannot be deleted yet', () => {
    const a = scanning();
    const expected = { code: 'attachment_not_ready', details: expect.objectContaining({ current_status: 'scanning', retry_after_ms: 500 }) };
    expect(() => a.assertUsable()).toThrow(expect.objectContaining(expected));
    expect(() => a.delete(later(1))).toThrow(DomainError);
    expect(a.status).toBe('scanning');
  });

  it('given ready, when its expiry has passed, then it expires; before that it cannot', () => {
    const a = loaded('ready');
    expect(() => a.expire(later(TTL - 1))).toThrow();
    a.expire(later(TTL));
    expect(a.status).toBe('expired');
    expect(() => a.assertUsable()).toThrow(expect.objectContaining({ code: 'attachment_expired' }));
  });

  it('given ready, when deleted, then it is deleted and answers not found', () => {
    const a = loaded('ready');
    a.delete(later(5));
    expect(a.snapshot()).toMatchObject({ status: 'deleted', version: 5 });
    expect(a.pullEvents()).toEqual([{ type: 'attachment.deleted', attachmentId: a.id }]);
    expect(() => a.assertUsable()).toThrow(expect.objectContaining({ code: 'attachment_not_found' }));
  });

  it('given uploading, when the transfer dies, then it is failed', () => {
    const a = loaded('uploading');
    a.fail('upload_incomplete', later(1));
    expect(a.snapshot()).toMatchObject({ status: 'failed', rejectionReason: 'upload_incomplete' });
  });

  const ALL: AttachmentStatus[] = ['uploading', 'uploaded', 'scanning', 'ready', 'rejected', 'failed', 'expired', 'deleted'];
  const LEGAL = new Set([
    'uploading>uploaded',
    'uploading>failed',
    'uploaded>scanning',
    'scanning>ready',
    'scanning>rejected',
    'ready>expired',
    'ready>deleted',
    'rejected>deleted',
    'failed>deleted',
    'expired>deleted',
  ]);

  it('allows exactly the moves of the state machine', () => {
    for (const from of ALL) for (const to of ALL) expect([`${from}>${to}`, canMove(from, to)]).toEqual([`${from}>${to}`, LEGAL.has(`${from}>${to}`)]);
  });

  const moves: Array<[AttachmentStatus, (a: Attachment) => void]> = [
    ['uploaded', (a) => a.completeUpload({ sizeBytes: 1, sha256: SHA }, later(TTL + 1))],
    ['scanning', (a) => a.startScan(later(TTL + 1))],
    ['ready', (a) => a.markReady('text/plain', later(TTL + 1))],
    ['rejected', (a) => a.reject('executable', null, later(TTL + 1))],
    ['failed', (a) => a.fail('x', later(TTL + 1))],
    ['expired', (a) => a.expire(later(TTL + 1))],
  ];
  for (const [to, move] of moves) {
    for (const from of ALL.filter((f) => !LEGAL.has(`${f}>${to}`))) {
      it(`given ${from}, when moved to ${to}, then it throws and nothing changes`, () => {
        const a = loaded(from);
        expect(() => move(a)).toThrow(IllegalAttachmentTransition);
        expect(a.status).toBe(from);
        expect(a.isDirty).toBe(false);
        expect(a.pullEvents()).toEqual([]);
      });
    }
  }

  it('given a terminal deleted attachment, when deleted again, then it throws', () => {
    expect(() => loaded('deleted').delete(later(1))).toThrow(IllegalAttachmentTransition);
  });

  it('refuses a malformed digest or size', () => {
    expect(() => Attachment.restore(begin().snapshot()).completeUpload({ sizeBytes: 1, sha256: 'xyz' }, T0)).toThrow();
    expect(() => Attachment.restore(begin().snapshot()).completeUpload({ sizeBytes: -1, sha256: SHA }, T0)).toThrow();
  });
});
