import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { DomainError } from '../../../../../common/errors/domain-error';
import { exportedRecord } from '../../../domain/audit-export';
import { AuditReader } from '../../../domain/audit-reader';
import { GetExportedAuditRecordQuery } from './get-exported-audit-record.query';

@QueryHandler(GetExportedAuditRecordQuery)
export class GetExportedAuditRecordHandler implements IQueryHandler<GetExportedAuditRecordQuery> {
  constructor(private readonly reader: AuditReader) {}

  async execute({ principal, id }: GetExportedAuditRecordQuery): Promise<Record<string, unknown> | null> {
    if (principal.role !== 'admin') throw new DomainError('forbidden', 'the audit trail needs an admin API key');
    const found = await this.reader.byId(principal.tenantId, id);
    return found ? exportedRecord(found.record, found.eras) : null;
  }
}
