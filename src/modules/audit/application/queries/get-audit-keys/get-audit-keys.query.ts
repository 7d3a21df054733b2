import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { AuditPublicKey } from '../../../domain/audit-checkpoint';

export interface AuditKeys {
  /** The key this node signs with. */
  currentKeyId: string;
  /** Every key that signed (old ones after a rotation too), oldest first. */
  keys: AuditPublicKey[];
}

/** The public keys that check the tenant's (every tenant's) signed checkpoints. */
export class GetAuditKeysQuery extends Query<AuditKeys> {
  constructor(readonly principal: Principal) {
    super();
  }
}
