import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module';
import { CompatSse } from './compat-sse';
import { SessionEventFeed } from './session-event-feed';
import { SessionInputs } from './session-inputs';

/**
 * The native side as protocol adapters use it (OpenAI Agents API, AG-UI): `SessionEventFeed`
 * (follow a session's projected events from a cursor, live tail included), `SessionInputs`
 * (the caller's session; input as a new run or a steer; cancel; tool outputs; approvals) and
 * `CompatSse` (an SSE response with the native limits). Adapters hold no state of their own.
 */
@Module({
  imports: [EventsModule],
  providers: [SessionEventFeed, SessionInputs, CompatSse],
  exports: [SessionEventFeed, SessionInputs, CompatSse],
})
export class CompatSharedModule {}
