import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { SortOrder } from '../../../../../common/http/pagination';
import { SessionProps } from '../../../domain/session.aggregate';

export class ListSessionsQuery extends Query<{ items: Readonly<SessionProps>[]; hasMore: boolean }> {
  constructor(
    readonly principal: Principal,
    readonly page: { after?: string; limit: number; order: SortOrder },
  ) {
    super();
  }
}
