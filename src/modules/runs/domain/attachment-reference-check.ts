/**
 * Port (implemented by the attachments module): input may reference only the owner's own
 * `ready` attachments. Throws attachment_not_found / attachment_not_ready / attachment_expired /
 * attachment_rejected.
 */
export abstract class AttachmentReferenceCheck {
  abstract assertUsable(owner: { tenantId: string; subjectId: string }, attachmentIds: string[]): Promise<void>;
}
