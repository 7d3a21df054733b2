import { Command } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';

/** Puts the caller's tenant on legal hold (its audit records are not pruned) or takes it off. */
export class SetLegalHoldCommand extends Command<{ enabled: boolean; updatedAt: Date; updatedBy: string | null }> {
  constructor(
    readonly principal: Principal,
    readonly enabled: boolean,
  ) {
    super();
  }
}
