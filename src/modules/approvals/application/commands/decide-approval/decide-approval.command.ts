import { Command } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { ApprovalProps, Decision } from '../../../domain/approval.aggregate';

export class DecideApprovalCommand extends Command<Readonly<ApprovalProps>> {
  constructor(
    readonly principal: Principal,
    readonly runId: string,
    readonly approvalId: string,
    readonly decision: Decision,
    readonly reason: string | null,
  ) {
    super();
  }
}
