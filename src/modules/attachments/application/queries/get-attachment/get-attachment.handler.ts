import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { AttachmentProps } from '../../../domain/attachment.aggregate';
import { AttachmentRepository } from '../../../domain/attachment.repository';
import { loadOwnedAttachment } from '../../load-owned-attachment';
import { GetAttachmentQuery } from './get-attachment.query';

@QueryHandler(GetAttachmentQuery)
export class GetAttachmentHandler implements IQueryHandler<GetAttachmentQuery> {
  constructor(private readonly repo: AttachmentRepository) {}

  async execute(q: GetAttachmentQuery): Promise<Readonly<AttachmentProps>> {
    return (await loadOwnedAttachment(this.repo, q.principal, q.id)).snapshot();
  }
}
