import { Controller, Get, Optional, Param, Query, Req, Res } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiExtraModels, ApiHeader, ApiOperation, ApiParam, ApiProduces, ApiResponse, ApiTags, getSchemaPath } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { keyIdentityOf } from '../../../common/auth/api-keys.service';
import { CurrentPrincipal } from '../../../common/auth/auth.decorators';
import { Principal } from '../../../common/auth/principal';
import { DomainError } from '../../../common/errors/domain-error';
import { ApiErrors } from '../../../common/errors/error.dto';
import { Metrics } from '../../../common/metrics/metrics';
import { GetRunOwnerQuery } from '../application/get-run-owner.query';
import { GetSessionOwnerQuery } from '../application/get-session-owner.query';
import { HUB_FIRST_PAGE_SIZE, Prefetched, Reservation, StreamHub, StreamKind, Subscription } from '../application/stream-hub';
import { ToolVisibilityResolver } from '../application/tool-visibility';
import { projectEvent } from '../domain/event-projector';
import { EventStreams, EventStreamState } from '../domain/event-streams';
import { Audience, EventStore, StoredRunEvent } from '../domain/run-event';
import { EventsQueryDto, RunEventListResponseDto } from './dto/run-event.response.dto';
import { encodeSseFrame, wantsEventStream } from './sse';
import { SseStreamsService } from './sse-streams.service';

const CURSOR_RE = /^\d{1,15}$/;
const DEFAULT_LIMIT = 100;

const SSE_EXAMPLE = [
  'retry: 3000',
  'id: 1',
  'event: run.started',
  'data: {"event_id":"evt_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B","run_id":"run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3C","session_id":"sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3D","sequence":1,"session_sequence":5,"type":"run.started","occurred_at":"2025-01-02T03:04:05.678Z","data":{"status":"running"}}',
  '',
  ': keep-alive',
  '',
].join('\n');

const JSON_EXAMPLE = {
  object: 'list',
  data: [
    {
      event_id: 'evt_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B',
      run_id: 'run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3C',
      session_id: 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3D',
      sequence: 1,
      session_sequence: 5,
      type: 'run.started',
      occurred_at: '2025-01-02T03:04:05.678Z',
      data: { status: 'running' },
    },
  ],
  has_more: false,
  last_sequence: 1,
};

const NEGOTIATION =
  'Representation by `Accept`: `text/event-stream` gives the SSE stream; anything else a JSON page (the default, also for `*/*`). ' +
  'q-values count: the stream is chosen when `text/event-stream` is named with a q above 0 that is not below the q given to `application/json` ' +
  '(`text/event-stream;q=0, application/json` is JSON; `application/json;q=0.5, text/event-stream` and `text/event-stream, application/json` are SSE). ' +
  'In Swagger UI, pick the response content type.';

/** Swagger for both representations of an event stream and its resume headers. */
function ApiEventStream(kind: StreamKind) {
  const idName = kind === 'run' ? 'sequence' : 'session_sequence';
  return (target: object, key: string | symbol, descriptor: PropertyDescriptor) => {
    ApiProduces('application/json', 'text/event-stream')(target, key, descriptor);
    ApiHeader({
      name: 'Last-Event-ID',
      required: false,
      description: `SSE resume cursor (the last \`${idName}\` received); wins over \`?after\`. Delivers exactly the events after it, in order, then live ones.`,
      // No example: Swagger UI would send it, and a stream would start after event 41.
      schema: { type: 'string', pattern: '^[0-9]{1,15}$' },
    })(target, key, descriptor);
    ApiResponse({
      status: 200,
      description:
        `\`application/json\` (default): a page of events after \`after\`, ordered by \`${idName}\`.\n\n` +
        `\`text/event-stream\` (SSE): every event is one frame \`id: <${idName}>\`, \`event: <type>\`, \`data: <RunEvent JSON>\` (the schema below is that of one \`data:\`). ` +
        `The stream starts with \`retry: 3000\` (the first line of the first frame, or alone when there is no event yet); a \`: keep-alive\` comment line every SSE_KEEPALIVE_MS (default 15000). ` +
        'A blank line only ever ends an event. Headers: `Cache-Control: no-cache`, `X-Accel-Buffering: no`, `Vary: Accept`, `X-Request-Id`. ' +
        (kind === 'run'
          ? 'The server closes the stream after sending `run.finished`.'
          : 'The stream stays open across the session\'s runs until the client leaves.') +
        ' A client that does not keep up (unbounded buffering) is disconnected and resumes with `Last-Event-ID`.\n\n' +
        'On the wire:\n\n```\n' +
        SSE_EXAMPLE +
        '```',
      content: {
        'application/json': { schema: { $ref: getSchemaPath(RunEventListResponseDto) }, example: JSON_EXAMPLE },
        // The schema is that of one frame's `data:`; the wire text is shown in the description.
        'text/event-stream': { schema: { $ref: '#/components/schemas/RunEvent' } },
      },
    })(target, key, descriptor);
    if (kind === 'run') {
      ApiResponse({
        status: 204,
        description: 'SSE only: the run is finished and the cursor is at (or past) its last event; nothing more will come (EventSource stops reconnecting).',
      })(target, key, descriptor);
    }
  };
}

@ApiTags('Events')
@ApiBearerAuth('api-key')
@ApiExtraModels(RunEventListResponseDto)
@Controller('v1')
export class EventsController {
  /** Encoded SSE frames per stream kind and audience, keyed by the hub's event objects. */
  private readonly frames: Record<StreamKind, Record<Audience, WeakMap<StoredRunEvent, string>>> = {
    run: { admin: new WeakMap(), member: new WeakMap() },
    session: { admin: new WeakMap(), member: new WeakMap() },
  };

  /** The bytes of one delivered batch per stream kind and audience, keyed by the hub's array. */
  private readonly chunks: Record<StreamKind, Record<Audience, WeakMap<StoredRunEvent[], { bytes: Buffer; n: number }>>> = {
    run: { admin: new WeakMap(), member: new WeakMap() },
    session: { admin: new WeakMap(), member: new WeakMap() },
  };

  constructor(
    private readonly queries: QueryBus,
    private readonly store: EventStore,
    private readonly streams: EventStreams,
    private readonly hub: StreamHub,
    private readonly sse: SseStreamsService,
    private readonly visibility: ToolVisibilityResolver,
    @Optional() private readonly metrics?: Metrics,
  ) {}

  @Get('runs/:id/events')
  @ApiOperation({
    summary: "A run's events (JSON page or SSE stream)",
    description: `Cursor: \`sequence\`. Members get the public projection, admins the full events. ${NEGOTIATION}`,
  })
  @ApiParam({ name: 'id', example: 'run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3C' })
  @ApiEventStream('run')
  @ApiErrors('invalid_request', 'invalid_cursor', 'run_not_found', 'cursor_expired', 'rate_limited')
  async runEvents(
    @CurrentPrincipal() principal: Principal,
    @Param('id') id: string,
    @Query() q: EventsQueryDto,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const cursor = wantsEventStream(req.headers.accept) ? validCursor(rawCursorOf(req, q, true)) : undefined;
    if (cursor === undefined) {
      const owner = await this.queries.execute(new GetRunOwnerQuery(principal, id));
      return this.serve('run', owner.runId, owner.finished, principal, q, req, reply, owner.stream);
    }
    // SSE: the stream is followed from now on, and its first page read while the run's owner is
    // checked (two statements at once: the first frame is one round trip nearer). Nothing of it
    // is sent unless the caller may see the run.
    const reservation = this.hub.reserve('run', id);
    try {
      const [owner, events] = await Promise.all([this.queries.execute(new GetRunOwnerQuery(principal, id)), this.store.readRun(id, cursor, HUB_FIRST_PAGE_SIZE)]);
      const first = { reservation, prefetched: { events, complete: events.length < HUB_FIRST_PAGE_SIZE } };
      await this.serve('run', owner.runId, owner.finished, principal, q, req, reply, owner.stream, first);
    } finally {
      reservation.release();
    }
  }

  @Get('sessions/:id/events')
  @ApiOperation({
    summary: "A session's events across its runs (JSON page or SSE stream)",
    description: `Cursor: \`session_sequence\`. Members get the public projection, admins the full events. ${NEGOTIATION}`,
  })
  @ApiParam({ name: 'id', example: 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3D' })
  @ApiEventStream('session')
  @ApiErrors('invalid_request', 'invalid_cursor', 'session_not_found', 'cursor_expired', 'rate_limited')
  async sessionEvents(
    @CurrentPrincipal() principal: Principal,
    @Param('id') id: string,
    @Query() q: EventsQueryDto,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const owner = await this.queries.execute(new GetSessionOwnerQuery(principal, id));
    await this.serve('session', owner.sessionId, false, principal, q, req, reply);
  }

  private async serve(
    kind: StreamKind,
    id: string,
    finished: boolean,
    principal: Principal,
    q: EventsQueryDto,
    req: FastifyRequest,
    reply: FastifyReply,
    /** The stream's counters when the caller already read them (run streams). */
    known?: EventStreamState,
    /** SSE: the subscriber's first page, read after the stream was reserved (StreamHub.subscribe). */
    first?: { reservation: Reservation; prefetched: Prefetched },
  ): Promise<void> {
    const wantsSse = wantsEventStream(req.headers.accept);
    const cursor = parseCursor(rawCursorOf(req, q, wantsSse));
    const state = known ?? (await this.streams.state(id));
    if (cursor < state.purgedThrough) {
      throw new DomainError('cursor_expired', 'the cursor is older than the retained events; read the resource for its final state', {
        after: cursor,
        oldest_available: state.purgedThrough,
      });
    }
    const audience: Audience = principal.role === 'admin' ? 'admin' : 'member';
    const project = (e: StoredRunEvent) => projectEvent(e, audience, this.visibility.lookup);

    if (!wantsSse) {
      const limit = q.limit ?? DEFAULT_LIMIT;
      const rows = kind === 'run' ? await this.store.readRun(id, cursor, limit + 1) : await this.store.readSession(id, cursor, limit + 1);
      const page = rows.slice(0, limit);
      const lastInPage = page.length ? (kind === 'run' ? page[page.length - 1].sequence : page[page.length - 1].sessionSequence) : 0;
      const body: RunEventListResponseDto = {
        object: 'list',
        data: page.map(project),
        has_more: rows.length > limit,
        last_sequence: Math.max(state.lastSequence, lastInPage),
      };
      // The same URL answers JSON or SSE by Accept: caches must key on it.
      await reply.status(200).type('application/json').header('vary', 'Accept').send(JSON.stringify(body));
      return;
    }

    if (kind === 'run' && finished && cursor >= state.lastSequence) {
      await reply.status(204).header('vary', 'Accept').send();
      return;
    }
    const streamKey = keyIdentityOf(principal);
    if (!(await this.sse.acquire(streamKey))) {
      throw new DomainError('rate_limited', 'too many open event streams for this API key', { retry_after_s: 5 });
    }
    // Delivery lag is measured on live deliveries only: events that occurred after this request
    // arrived. Replayed history (a reconnect from an old cursor) would count its age as lag.
    const openedAt = Date.now() - reply.elapsedTime;
    reply.hijack();
    const conn = this.sse.start(reply.raw, streamKey, { 'x-request-id': String(req.id) }, { kind, id });
    if (conn.isClosed) return;
    let sub: Subscription | null = null;
    conn.onClose(() => sub?.close());
    // The hub hands every subscriber of a stream the same event objects: each event is projected
    // and encoded once per audience (not once per subscriber), and a delivery is one write.
    const frames = this.frames[kind][audience];
    const chunks = this.chunks[kind][audience];
    sub = this.hub.subscribe(kind, id, cursor, {
      deliver: (events) => {
        // Subscribers at the head get the same array: its bytes are made once for all of them.
        let c = chunks.get(events);
        if (c === undefined) {
          let text = '';
          let n = 0;
          for (const e of events) {
            let frame = frames.get(e);
            if (frame === undefined) {
              frame = encodeSseFrame({ id: kind === 'run' ? e.sequence : e.sessionSequence, event: e.type, data: JSON.stringify(project(e)) });
              frames.set(e, frame);
            }
            text += frame;
            n++;
            if (kind === 'run' && e.type === 'run.finished') break;
          }
          c = { bytes: Buffer.from(text), n };
          chunks.set(events, c);
        }
        if (c.n === 0 || !conn.write(c.bytes)) return;
        if (this.metrics) {
          const now = Date.now();
          for (let i = 0; i < c.n; i++) if (events[i].occurredAt.getTime() >= openedAt) this.metrics.recordDeliveryLag(events[i].occurredAt, now);
        }
        if (kind === 'run' && events[c.n - 1].type === 'run.finished') conn.end();
      },
    }, first);
    if (conn.isClosed) sub.close();
  }
}

/** A request's cursor as sent: for SSE, `Last-Event-ID` (trimmed) wins over `?after`. */
function rawCursorOf(req: FastifyRequest, q: EventsQueryDto, sse: boolean): string | undefined {
  const header = req.headers['last-event-id'];
  const headerCursor = typeof header === 'string' && header.trim() !== '' ? header.trim() : undefined;
  return sse ? (headerCursor ?? q.after) : q.after;
}

/** `parseCursor`, or undefined for a cursor it would refuse. */
function validCursor(raw: string | undefined): number | undefined {
  return raw === undefined || raw === '' || CURSOR_RE.test(raw) ? parseCursor(raw) : undefined;
}

/** A stream cursor: a non-negative integer (absent: 0). Anything else is 400 `invalid_cursor`. */
export function parseCursor(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 0;
  if (!CURSOR_RE.test(raw)) throw new DomainError('invalid_cursor', 'the cursor must be a non-negative integer', { after: raw });
  return Number(raw);
}
