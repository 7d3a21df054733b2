import { Injectable } from '@nestjs/common';
import { attachmentNotFound } from '../domain/attachment.aggregate';
import { AttachmentRepository } from '../domain/attachment.repository';

export interface AttachmentOwner {
  tenantId: string;
  subjectId: string;
}

/**
 * What the runs module asks before accepting `attachment_ref` input parts: each id must be the
 * caller's own `ready` attachment. Errors (CONTRACT section 7): 404 `attachment_not_found`
 * (missing, deleted or another owner's), 409 `attachment_not_ready` (details.current_status,
 * details.retry_after_ms), 409 `attachment_expired`, 422 `attachment_rejected`
 * (details.rejection_reason). The first offending id, in the given order, decides.
 * Joins the caller's transaction when there is one.
 */
@Injectable()
export class AttachmentReferenceChecker {
  constructor(private readonly repo: AttachmentRepository) {}

  async assertUsable(owner: AttachmentOwner, attachmentIds: string[]): Promise<void> {
    const unique = [...new Set(attachmentIds)];
    if (unique.length === 0) return;
    const byId = new Map((await this.repo.findByIds(unique)).map((a) => [a.id, a]));
    for (const id of unique) {
      const a = byId.get(id);
      if (!a || a.owner.tenantId !== owner.tenantId || a.owner.subjectId !== owner.subjectId) throw attachmentNotFound(id);
      a.assertUsable();
    }
  }
}
