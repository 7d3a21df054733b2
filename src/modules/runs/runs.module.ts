import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AgentsModule } from '../agents/agents.module';
import { EventsModule } from '../events/events.module';
import { SessionsModule } from '../sessions/sessions.module';
import { RunsController } from './api/runs.controller';
import { CancelRunHandler } from './application/commands/cancel-run/cancel-run.handler';
import { CreateRunHandler } from './application/commands/create-run/create-run.handler';
import { SubmitToolOutputsHandler } from './application/commands/submit-tool-outputs/submit-tool-outputs.handler';
import { ExistingRunsHandler } from './application/queries/existing-runs/existing-runs.handler';
import { GetRunViewHandler } from './application/queries/get-run-view/get-run-view.handler';
import { GetRunOwnerHandler } from './application/queries/get-run-owner/get-run-owner.handler';
import { ListRunsHandler } from './application/queries/list-runs/list-runs.handler';
import { RunPersistence } from './application/run-persistence';
import { RunSignals } from './application/run-signals';
import { RunViews } from './application/run-views';
import { ToolArgumentsRedactor } from './application/tool-arguments-redactor';
import { AttachmentReferenceChecker } from '../attachments/application/attachment-reference.checker';
import { AttachmentReferenceCheck } from './domain/attachment-reference-check';
import { RunRepository } from './domain/run.repository';
import { RunOrmEntity } from './infrastructure/run.orm-entity';
import { RunTypeormRepository } from './infrastructure/run.typeorm-repository';
import { RunExecutor } from './worker/run-executor';
import { RunWorker } from './worker/run-worker';

/** Runs: creation, cancel, the worker (leases) and the agent loop. */
@Module({
  imports: [TypeOrmModule.forFeature([RunOrmEntity]), SessionsModule, AgentsModule, EventsModule],
  controllers: [RunsController],
  providers: [
    { provide: RunRepository, useClass: RunTypeormRepository },
    // Implemented by the (global) attachments module.
    { provide: AttachmentReferenceCheck, useExisting: AttachmentReferenceChecker },
    RunSignals,
    RunPersistence,
    RunViews,
    ToolArgumentsRedactor,
    CreateRunHandler,
    CancelRunHandler,
    SubmitToolOutputsHandler,
    GetRunViewHandler,
    ExistingRunsHandler,
    GetRunOwnerHandler,
    ListRunsHandler,
    RunExecutor,
    RunWorker,
  ],
  exports: [RunRepository, RunPersistence, RunSignals, RunViews, RunWorker, RunExecutor, ToolArgumentsRedactor],
})
export class RunsModule {}
