import { Module, OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../../common/config/app-config';
import { ReadinessReports } from '../../common/health/readiness-reports';
import { Metrics } from '../../common/metrics/metrics';
import { DATABASE_TARGET, DatabaseTarget } from '../../common/database/database.module';
import { UnitOfWork } from '../../common/database/unit-of-work';
import { AgentsModule } from '../agents/agents.module';
import { EventsController } from './api/events.controller';
import { SseStreamsService } from './api/sse-streams.service';
import { EventRetentionSweeper } from './application/event-retention-sweeper';
import { RecentEvents } from './application/recent-events';
import { StreamHub } from './application/stream-hub';
import { ToolVisibilityResolver } from './application/tool-visibility';
import { EventStreams } from './domain/event-streams';
import { Notifier } from './domain/notifier';
import { EventStore } from './domain/run-event';
import { EventAppendParts } from './infrastructure/event-append-parts';
import { InProcessNotifier } from './infrastructure/in-process-notifier';
import { NatsNotifier } from './infrastructure/nats-notifier';
import { PgNotifier } from './infrastructure/pg-notifier';
import { TypeormEventStore } from './infrastructure/typeorm-event-store';

/**
 * Events: the event store (append inside the writer's transaction), the notifier (NATS with
 * NATS_URL, else in-process for the embedded database, LISTEN/NOTIFY for PostgreSQL), one stream hub per node, the projector,
 * and the JSON + SSE endpoints. Exports `EventStore` (writers), `EventAppendParts` (a run save's statement), `Notifier`, `StreamHub` and `SseStreamsService` (SSE responses of the compatibility surfaces).
 */
@Module({
  imports: [AgentsModule],
  controllers: [EventsController],
  providers: [
    {
      provide: Notifier,
      inject: [UnitOfWork, DATABASE_TARGET, AppConfig, Metrics],
      useFactory: (uow: UnitOfWork, target: DatabaseTarget, config: AppConfig, metrics: Metrics) =>
        config.natsUrl
          ? new NatsNotifier(
              uow,
              { url: config.natsUrl, subject: config.natsSubject, degradedPollMs: config.natsDegradedPollMs, safetyPollMs: config.natsSafetyPollMs, nodeId: config.nodeId },
              metrics,
            )
          : target.kind === 'postgres'
            ? new PgNotifier(uow, target.url, { safetyPollMs: config.pgNotifySafetyPollMs })
            : new InProcessNotifier(uow),
    },
    TypeormEventStore,
    { provide: EventStore, useExisting: TypeormEventStore },
    { provide: EventStreams, useExisting: TypeormEventStore },
    { provide: EventAppendParts, useExisting: TypeormEventStore },
    RecentEvents,
    StreamHub,
    ToolVisibilityResolver,
    SseStreamsService,
    EventRetentionSweeper,
  ],
  exports: [EventStore, EventAppendParts, EventStreams, Notifier, StreamHub, ToolVisibilityResolver, SseStreamsService],
})
export class EventsModule implements OnModuleInit {
  constructor(
    private readonly notifier: Notifier,
    private readonly readiness: ReadinessReports,
  ) {}

  onModuleInit(): void {
    // A notifier that is down never makes the node unready: streams then read PostgreSQL.
    this.readiness.register('notifier', () => ({ ready: true, ...this.notifier.state() }));
  }
}
