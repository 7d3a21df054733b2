import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { SortOrder } from '../../../../../common/http/pagination';
import { MessageProps } from '../../../domain/message';
import { MessageFilter } from '../../../domain/message.repository';

/**
 * A page of the caller's session's messages by `sequence` (keyset: `after` a message id of this
 * session, `limit`, `order`), all of them or (`filter.runId`) those of one run.
 */
export class ListMessagesQuery extends Query<{ items: MessageProps[]; hasMore: boolean }> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
    readonly page: { after?: string; limit: number; order: SortOrder },
    readonly filter: MessageFilter = {},
  ) {
    super();
  }
}
