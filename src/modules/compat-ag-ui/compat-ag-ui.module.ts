import { Module } from '@nestjs/common';
import { CompatSharedModule } from '../compat-shared/compat-shared.module';
import { AgUiController } from './api/ag-ui.controller';
import { AgUiRunsService } from './application/ag-ui-runs.service';

/**
 * AG-UI 1.0 (CONTRACT section 15): an adapter over the native commands and queries (sessions,
 * runs, approvals, tool outputs) and the event stream with the caller's projection, through the
 * helpers it shares with the OpenAI adapter (CompatSharedModule: SessionInputs, SessionEventFeed,
 * CompatSse), and the idempotency store (threadId and runId). No tables of its own.
 */
@Module({
  imports: [CompatSharedModule],
  controllers: [AgUiController],
  providers: [AgUiRunsService],
})
export class CompatAgUiModule {}
