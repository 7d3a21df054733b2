import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { AuditFilters, AuditPage } from '../../../domain/audit-reader';
import { AuditRecord } from '../../../domain/audit-record';

/** One page of the caller's tenant's audit trail (admin only: the route checks the role). */
export class ListAuditRecordsQuery extends Query<{ items: AuditRecord[]; hasMore: boolean }> {
  constructor(
    readonly principal: Principal,
    readonly filters: AuditFilters,
    readonly page: AuditPage,
  ) {
    super();
  }
}
