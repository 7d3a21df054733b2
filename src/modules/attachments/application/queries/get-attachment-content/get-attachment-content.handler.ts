import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { AttachmentRepository } from '../../../domain/attachment.repository';
import { BlobStore } from '../../../domain/blob-store';
import { loadOwnedAttachment } from '../../load-owned-attachment';
import { AttachmentContent, GetAttachmentContentQuery } from './get-attachment-content.query';

/** Content of a `ready` attachment; any other status answers with the contract's state errors. */
@QueryHandler(GetAttachmentContentQuery)
export class GetAttachmentContentHandler implements IQueryHandler<GetAttachmentContentQuery> {
  constructor(
    private readonly repo: AttachmentRepository,
    private readonly blobs: BlobStore,
  ) {}

  async execute(q: GetAttachmentContentQuery): Promise<AttachmentContent> {
    const a = await loadOwnedAttachment(this.repo, q.principal, q.id);
    a.assertUsable();
    const s = a.snapshot();
    return { attachment: s, content: this.blobs.read(s.storageKey, { sizeBytes: s.sizeBytes, sha256: s.sha256 ?? '' }) };
  }
}
