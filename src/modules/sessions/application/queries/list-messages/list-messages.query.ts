import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { SortOrder } from '../../../../../common/http/pagination';
import { MessageProps } from '../../../domain/message';

export class ListMessagesQuery extends Query<{ items: MessageProps[]; hasMore: boolean }> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
    readonly page: { after?: string; limit: number; order: SortOrder },
  ) {
    super();
  }
}
