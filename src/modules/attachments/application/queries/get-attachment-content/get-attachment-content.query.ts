import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import type { AttachmentProps } from '../../../domain/attachment.aggregate';

export interface AttachmentContent {
  attachment: Readonly<AttachmentProps>;
  /** Streamed from storage and verified (size, sha256) as it goes. */
  content: AsyncIterable<Buffer>;
}

export class GetAttachmentContentQuery extends Query<AttachmentContent> {
  constructor(
    readonly principal: Principal,
    readonly id: string,
  ) {
    super();
  }
}
