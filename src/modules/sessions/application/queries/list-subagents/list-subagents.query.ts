import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { SortOrder } from '../../../../../common/http/pagination';
import { SessionProps } from '../../../domain/session.aggregate';

/** `GET /sessions/{id}/subagents` (CONTRACT 16): a page of the session's subagents (child sessions). */
export class ListSubagentsQuery extends Query<{ items: Array<Readonly<SessionProps>>; hasMore: boolean }> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
    readonly page: { after?: string; limit: number; order: SortOrder },
  ) {
    super();
  }
}
