import { Global, Module } from '@nestjs/common';
import { RunsModule } from '../runs/runs.module';
import { ApprovalGate } from '../runs/domain/approval-gate';
import { ApprovalsController } from './api/approvals.controller';
import { ApprovalExpirySweeper } from './application/approval-expiry.sweeper';
import { ApprovalGateService } from './application/approval-gate.service';
import { DecideApprovalHandler } from './application/commands/decide-approval/decide-approval.handler';
import { ListApprovalsHandler } from './application/queries/list-approvals/list-approvals.handler';
import { ApprovalRepository } from './domain/approval.repository';
import { ApprovalTypeormRepository } from './infrastructure/approval.typeorm-repository';

/**
 * Approvals of risky tool calls. Global so the runs module's loop gets the ApprovalGate it
 * declares (a port) without importing this module back.
 */
@Global()
@Module({
  imports: [RunsModule],
  controllers: [ApprovalsController],
  providers: [
    { provide: ApprovalRepository, useClass: ApprovalTypeormRepository },
    ApprovalGateService,
    { provide: ApprovalGate, useExisting: ApprovalGateService },
    DecideApprovalHandler,
    ListApprovalsHandler,
    ApprovalExpirySweeper,
  ],
  exports: [ApprovalGate],
})
export class ApprovalsModule {}
