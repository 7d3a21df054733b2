import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { DomainError } from '../../../../../common/errors/domain-error';
import { AuditReader } from '../../../domain/audit-reader';
import { ListAuditRecordsQuery } from './list-audit-records.query';

@QueryHandler(ListAuditRecordsQuery)
export class ListAuditRecordsHandler implements IQueryHandler<ListAuditRecordsQuery> {
  constructor(private readonly reader: AuditReader) {}

  async execute({ principal, filters, page }: ListAuditRecordsQuery) {
    if (principal.role !== 'admin') throw new DomainError('forbidden', 'the audit trail needs an admin API key');
    return this.reader.list(principal.tenantId, filters, page);
  }
}
