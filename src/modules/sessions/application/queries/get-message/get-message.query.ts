import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { MessageProps } from '../../../domain/message';

export class GetMessageQuery extends Query<MessageProps> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
    readonly messageId: string,
  ) {
    super();
  }
}
