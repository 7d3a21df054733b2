import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { AppConfig } from '../../../../../common/config/app-config';
import { DomainError } from '../../../../../common/errors/domain-error';
import { AuditReader } from '../../../domain/audit-reader';
import { AuditStatus, GetAuditStatusQuery } from './get-audit-status.query';

@QueryHandler(GetAuditStatusQuery)
export class GetAuditStatusHandler implements IQueryHandler<GetAuditStatusQuery> {
  constructor(
    private readonly reader: AuditReader,
    private readonly config: AppConfig,
  ) {}

  async execute({ principal }: GetAuditStatusQuery): Promise<AuditStatus> {
    if (principal.role !== 'admin') throw new DomainError('forbidden', 'the audit trail needs an admin API key');
    const tenantId = principal.tenantId;
    const head = await this.reader.head(tenantId);
    return {
      legalHold: await this.reader.legalHold(tenantId),
      latestCheckpoint: await this.reader.latestCheckpoint(tenantId),
      firstSeq: await this.reader.firstSeq(tenantId),
      lastSeq: head?.lastSeq ?? 0,
      retentionDays: this.config.auditRetentionDays,
    };
  }
}
