import { Global, Module } from '@nestjs/common';
import { IntegrationEventFeed, IntegrationEventOutbox } from './integration-events';
import { PgIntegrationEvents } from './pg-integration-events';

/**
 * The integration-event outbox (cross-cutting, no business rules): producers (runs, attachments)
 * write events with their own statements through `IntegrationEventOutbox`; the consumer (webhooks)
 * takes them through `IntegrationEventFeed`. Neither side knows the other.
 */
@Global()
@Module({
  providers: [
    PgIntegrationEvents,
    { provide: IntegrationEventOutbox, useExisting: PgIntegrationEvents },
    { provide: IntegrationEventFeed, useExisting: PgIntegrationEvents },
  ],
  exports: [IntegrationEventOutbox, IntegrationEventFeed],
})
export class OutboxModule {}
