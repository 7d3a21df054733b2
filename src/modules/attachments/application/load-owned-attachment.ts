import { canSee, Principal } from '../../../common/auth/principal';
import { Attachment, attachmentNotFound } from '../domain/attachment.aggregate';
import { AttachmentRepository } from '../domain/attachment.repository';

/** The attachment if the caller may see it; otherwise 404, exactly like a missing or deleted id. */
export async function loadOwnedAttachment(repo: AttachmentRepository, principal: Principal, id: string): Promise<Attachment> {
  const a = await repo.findById(id);
  if (!a || a.status === 'deleted' || !canSee(principal, a.owner)) throw attachmentNotFound(id);
  return a;
}
