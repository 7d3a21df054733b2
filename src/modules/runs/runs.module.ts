import { SessionWorkStatusSql } from '../sessions/domain/work-status';
import { RunWorkStatusSql } from './infrastructure/run-work-status.sql';
import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AgentsModule } from '../agents/agents.module';
import { EventsModule } from '../events/events.module';
import { SessionsModule } from '../sessions/sessions.module';
import { UsageModule } from '../usage/usage.module';
import { RunsController } from './api/runs.controller';
import { CancelRunHandler } from './application/commands/cancel-run/cancel-run.handler';
import { CreateRunHandler } from './application/commands/create-run/create-run.handler';
import { SubmitToolOutputsHandler } from './application/commands/submit-tool-outputs/submit-tool-outputs.handler';
import { AnswerToolCallbackHandler } from './application/commands/answer-tool-callback/answer-tool-callback.handler';
import { ExistingRunsHandler } from './application/queries/existing-runs/existing-runs.handler';
import { GetRunViewHandler } from './application/queries/get-run-view/get-run-view.handler';
import { GetInputReceiptHandler } from './application/queries/get-input-receipt/get-input-receipt.handler';
import { GetRunOwnerHandler } from './application/queries/get-run-owner/get-run-owner.handler';
import { ListRunsHandler } from './application/queries/list-runs/list-runs.handler';
import { RunPersistence } from './application/run-persistence';
import { ApplyToRun } from './application/apply-to-run';
import { RunSecrets } from './application/run-secrets';
import { CallbackSizeHook } from './api/callback-size.hook';
import { ApprovalsPort } from './application/approvals-port';
import { DecideRunApprovalHandler } from './application/commands/decide-run-approval/decide-run-approval.handler';
import { ExpireRunApprovalHandler } from './application/commands/expire-run-approval/expire-run-approval.handler';
import { RunSignals } from './application/run-signals';
import { RunViews } from './application/run-views';
import { ToolArgumentsRedactor } from './application/tool-arguments-redactor';
import { AttachmentReferenceChecker } from '../attachments/application/attachment-reference.checker';
import { AttachmentReferenceCheck } from './domain/attachment-reference-check';
import { RunRepository } from './domain/run.repository';
import { RunOrmEntity } from './infrastructure/run.orm-entity';
import { RunTypeormRepository } from './infrastructure/run.typeorm-repository';
import { LeaseKeeper } from './worker/lease-keeper';
import { ModelTurnEffect } from './worker/model-turn.effect';
import { RunEnv } from './worker/run-env';
import { RunExecutor } from './worker/run-executor';
import { RunLoop } from './worker/run-loop';
import { RunWriter } from './worker/run-writer';
import { ToolCallEffect } from './worker/tool-call.effect';
import { SubagentEffect } from './worker/subagent.effect';
import { SubagentRelay } from './application/subagent-relay';
import { TurnContext } from './worker/turn-context';
import { RunWorker } from './worker/run-worker';
import { RunWaker } from './worker/run-waker';

/** Runs: creation, cancel, the worker (leases) and the agent loop. */
@Module({
  imports: [TypeOrmModule.forFeature([RunOrmEntity]), SessionsModule, AgentsModule, EventsModule, UsageModule],
  controllers: [RunsController],
  providers: [
    { provide: RunRepository, useClass: RunTypeormRepository },
    // The sessions module's work status reads (found there at start-up).
    { provide: SessionWorkStatusSql, useClass: RunWorkStatusSql },
    // Implemented by the (global) attachments module.
    { provide: AttachmentReferenceCheck, useExisting: AttachmentReferenceChecker },
    RunSignals,
    RunPersistence,
    ApplyToRun,
    RunSecrets,
    CallbackSizeHook,
    ApprovalsPort,
    DecideRunApprovalHandler,
    ExpireRunApprovalHandler,
    RunViews,
    ToolArgumentsRedactor,
    CreateRunHandler,
    CancelRunHandler,
    SubmitToolOutputsHandler,
    AnswerToolCallbackHandler,
    GetRunViewHandler,
    GetInputReceiptHandler,
    ExistingRunsHandler,
    GetRunOwnerHandler,
    ListRunsHandler,
    // The executor: the loop, one provider per effect, the writer, the lease keeper (worker/).
    RunEnv,
    TurnContext,
    RunWriter,
    ModelTurnEffect,
    ToolCallEffect,
    SubagentEffect,
    SubagentRelay,
    RunLoop,
    LeaseKeeper,
    RunExecutor,
    RunWorker,
    RunWaker,
  ],
  exports: [RunRepository, RunPersistence, RunSignals, RunViews, RunWorker, RunWaker, RunExecutor, ToolArgumentsRedactor],
})
export class RunsModule {}
