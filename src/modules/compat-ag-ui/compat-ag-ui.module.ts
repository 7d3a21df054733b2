import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module';
import { AgUiController } from './api/ag-ui.controller';
import { AgUiRunsService } from './application/ag-ui-runs.service';

/**
 * AG-UI 1.0 (CONTRACT section 15): an adapter over the native commands and queries (sessions,
 * runs, approvals, tool outputs: through the CQRS buses), the idempotency store (threadId and
 * runId) and the event stream hub with the caller's projection. No tables of its own.
 */
@Module({
  imports: [EventsModule],
  controllers: [AgUiController],
  providers: [AgUiRunsService],
})
export class CompatAgUiModule {}
