import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module';
import { ToolArgumentsRedactor } from '../runs/application/tool-arguments-redactor';
import { ApprovalGate } from '../runs/domain/approval-gate';
import { ApprovalsController } from './api/approvals.controller';
import { ApprovalExpirySweeper } from './application/approval-expiry.sweeper';
import { ApprovalGateService } from './application/approval-gate.service';
import { DecideApprovalHandler } from './application/commands/decide-approval/decide-approval.handler';
import { ListApprovalsHandler } from './application/queries/list-approvals/list-approvals.handler';
import { ApprovalRepository } from './domain/approval.repository';
import { ApprovalTypeormRepository } from './infrastructure/approval.typeorm-repository';

/**
 * Approvals of risky tool calls. Implements the runs module's ApprovalGate port (runs finds it in
 * the application: ApprovalsPort) and talks to runs only through its commands and queries.
 */
@Module({
  imports: [EventsModule],
  controllers: [ApprovalsController],
  providers: [
    { provide: ApprovalRepository, useClass: ApprovalTypeormRepository },
    ApprovalGateService,
    { provide: ApprovalGate, useExisting: ApprovalGateService },
    DecideApprovalHandler,
    ListApprovalsHandler,
    ApprovalExpirySweeper,
    // The member view of tool arguments, as run resources show them (a stateless rule of runs).
    ToolArgumentsRedactor,
  ],
})
export class ApprovalsModule {}
