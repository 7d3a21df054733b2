import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { ApprovalProps } from '../../../domain/approval.aggregate';

export class ListApprovalsQuery extends Query<{ items: Readonly<ApprovalProps>[]; hasMore: boolean }> {
  constructor(
    readonly principal: Principal,
    readonly runId: string,
    readonly page: { after?: string; limit: number; order: 'asc' | 'desc' },
  ) {
    super();
  }
}
