import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { ChainBreak } from '../../../domain/audit-record';

export type ChainVerification = { ok: true; checked: number } | { ok: false; checked: number; firstBroken: ChainBreak };

/** Walks the caller's tenant's chain and recomputes every hash. */
export class VerifyAuditChainQuery extends Query<ChainVerification> {
  constructor(
    readonly principal: Principal,
    readonly batchSize = 500,
  ) {
    super();
  }
}
