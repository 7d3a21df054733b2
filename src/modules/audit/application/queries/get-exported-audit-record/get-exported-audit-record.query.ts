import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';

/**
 * One audit record of the caller's tenant as the export writes it (`exportedRecord`), or null
 * when there is none with that id (never was, or pruned). For the `audit.recorded` webhook body.
 */
export class GetExportedAuditRecordQuery extends Query<Record<string, unknown> | null> {
  constructor(
    readonly principal: Principal,
    readonly id: string,
  ) {
    super();
  }
}
