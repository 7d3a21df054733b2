import { Injectable } from '@nestjs/common';
import { SseConnection, SseFrame } from '../events/api/sse';
import { StreamTarget } from '../events/api/sse-streams.service';
import { StreamHub } from '../events/application/stream-hub';
import { ToolVisibilityResolver } from '../events/application/tool-visibility';
import { projectEvent } from '../events/domain/event-projector';
import { EventStreams } from '../events/domain/event-streams';
import { Audience, EventStore, PublicRunEvent, StoredRunEvent } from '../events/domain/run-event';
import { Principal } from '../../common/auth/principal';
import { DomainError } from '../../common/errors/domain-error';
import { writeFrames } from './compat-sse';

const HISTORY_PAGE = 500;

/** What an adapter makes of one batch of events: its frames, and whether its stream ends after them. */
export interface FeedStep {
  frames: SseFrame[];
  end?: boolean;
}

/** The projection a caller sees (CONTRACT section 10): admins everything, members private tools redacted. */
export function audienceOf(principal: Principal): Audience {
  return principal.role === 'admin' ? 'admin' : 'member';
}

/**
 * What an adapter of any protocol (OpenAI Agents API, AG-UI, ...) needs to follow a session's
 * (or one run's) projected event stream: the live head, the history of the run that was current
 * at a cursor (to rebuild an adapter's own per-run state before it goes on from there), and a
 * pipe from a cursor with a live tail into an SSE connection, through the node's one StreamHub
 * (replay, then live, with no gap and no duplicate at the seam). Events are the public
 * projection for the caller's audience, exactly as `/v1/sessions/{id}/events` and
 * `/v1/runs/{id}/events` show them. Nothing here is on `/v1`'s request path.
 */
@Injectable()
export class SessionEventFeed {
  constructor(
    private readonly store: EventStore,
    private readonly streams: EventStreams,
    private readonly hub: StreamHub,
    private readonly visibility: ToolVisibilityResolver,
  ) {}

  /** The position of the newest event of a session (its session_sequence) or run (its sequence), 0 when none: the cursor of a live start. */
  async head(streamId: string): Promise<number> {
    return (await this.streams.state(streamId)).lastSequence;
  }

  /** 410 `cursor_expired` when retention deleted events after `cursor`. */
  async assertCursorRetained(sessionId: string, cursor: number): Promise<void> {
    const state = await this.streams.state(sessionId);
    if (cursor < state.purgedThrough) {
      throw new DomainError('cursor_expired', 'the cursor is older than the retained events; read the resource for its final state', {
        after: cursor,
        oldest_available: state.purgedThrough,
      });
    }
  }

  project(e: StoredRunEvent, audience: Audience): PublicRunEvent {
    return projectEvent(e, audience, this.visibility.lookup);
  }

  /**
   * The events of the run that the session event `at` belongs to, from its first up to `at`
   * (projected): an adapter replays them silently to know where that run stood. Empty for 0.
   */
  async runHistoryAt(sessionId: string, at: number, audience: Audience): Promise<PublicRunEvent[]> {
    if (at <= 0) return [];
    const [event] = await this.store.readSession(sessionId, at - 1, 1);
    if (!event) return [];
    const out: PublicRunEvent[] = [];
    for (let after = 0; ; ) {
      const page = await this.store.readRun(event.runId, after, HISTORY_PAGE);
      for (const e of page) {
        if (e.sessionSequence > at) return out;
        out.push(this.project(e, audience));
      }
      if (page.length < HISTORY_PAGE) return out;
      after = page[page.length - 1].sequence;
    }
  }

  /**
   * Streams the events of `target` (a session or a run) after `cursor` into `conn`, history
   * first, then live, in order: `step` turns each batch (projected for `audience`) into frames,
   * written as one chunk, and may end the stream after them. The subscription ends with the
   * connection. A batch that fails to project or step goes to `fail` when given (its frames are
   * the stream's last), else it is logged by the hub and skipped. `step` must not block.
   */
  pipe(conn: SseConnection, target: StreamTarget, cursor: number, audience: Audience, step: (events: PublicRunEvent[]) => FeedStep, fail?: (err: unknown) => SseFrame[]): void {
    let ended = false;
    const sub = this.hub.subscribe(target.kind, target.id, cursor, {
      deliver: (events: StoredRunEvent[]) => {
        if (ended) return;
        let out: FeedStep;
        try {
          out = step(events.map((e) => this.project(e, audience)));
        } catch (err) {
          if (!fail) throw err;
          out = { frames: fail(err), end: true };
        }
        writeFrames(conn, out.frames);
        if (out.end) {
          ended = true;
          conn.end();
        }
      },
    });
    conn.onClose(() => sub.close());
    if (conn.isClosed || ended) sub.close();
  }
}
