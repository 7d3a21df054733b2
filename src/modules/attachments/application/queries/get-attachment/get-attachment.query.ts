import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import type { AttachmentProps } from '../../../domain/attachment.aggregate';

export class GetAttachmentQuery extends Query<Readonly<AttachmentProps>> {
  constructor(
    readonly principal: Principal,
    readonly id: string,
  ) {
    super();
  }
}
