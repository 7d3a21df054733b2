import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module';
import { CompatSse } from './compat-sse';
import { SessionEventFeed } from './session-event-feed';
import { SessionHistory } from './session-history';
import { SessionInputs } from './session-inputs';

/**
 * The native side as protocol adapters use it (OpenAI Agents API, AG-UI): `SessionEventFeed`
 * (a session's or a run's projected events from a cursor, live tail included, piped into an
 * SSE connection), `SessionInputs`
 * (the caller's session; input as a new run or a steer; cancel; tool outputs; approvals),
 * `SessionHistory` (keyset pages of a session's or run's messages, projected for the caller) and
 * `CompatSse` (an SSE response with the native limits). Adapters hold no state of their own.
 */
@Module({
  imports: [EventsModule],
  providers: [SessionEventFeed, SessionInputs, SessionHistory, CompatSse],
  exports: [SessionEventFeed, SessionInputs, SessionHistory, CompatSse],
})
export class CompatSharedModule {}
