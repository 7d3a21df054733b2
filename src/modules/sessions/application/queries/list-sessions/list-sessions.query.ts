import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { SortOrder } from '../../../../../common/http/pagination';
import { SessionProps } from '../../../domain/session.aggregate';
import { WorkStatus } from '../../../domain/work-status';

/** A page of the caller's sessions, each with its work status (CONTRACT section 7); `workStatus` filters. */
export class ListSessionsQuery extends Query<{ items: Readonly<SessionProps>[]; hasMore: boolean; workStatuses: Map<string, WorkStatus> }> {
  constructor(
    readonly principal: Principal,
    readonly page: { after?: string; limit: number; order: SortOrder },
    readonly filter: { workStatus?: WorkStatus } = {},
  ) {
    super();
  }
}
