import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { AuditCheckpoint } from '../../../domain/audit-checkpoint';

export interface AuditStatus {
  legalHold: { enabled: boolean; updatedAt: Date | null; updatedBy: string | null };
  /** The tenant's latest signed checkpoint, or null before the first. */
  latestCheckpoint: AuditCheckpoint | null;
  /** The first stored seq (above 1 after a prune), null when the trail is empty. */
  firstSeq: number | null;
  /** The chain head's seq (0 before the first record). */
  lastSeq: number;
  /** AUDIT_RETENTION_DAYS (0: records are kept). */
  retentionDays: number;
}

/** The state of the tenant's trail for its admins: legal hold, latest checkpoint, stored range, retention. */
export class GetAuditStatusQuery extends Query<AuditStatus> {
  constructor(readonly principal: Principal) {
    super();
  }
}
