import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { SortOrder } from '../../../../../common/http/pagination';
import { RunProps } from '../../../domain/run.aggregate';

export class ListRunsQuery extends Query<{ items: Readonly<RunProps>[]; hasMore: boolean }> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
    readonly page: { after?: string; limit: number; order: SortOrder },
  ) {
    super();
  }
}
