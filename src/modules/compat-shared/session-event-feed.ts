import { Injectable } from '@nestjs/common';
import { StreamHub, Subscription } from '../events/application/stream-hub';
import { ToolVisibilityResolver } from '../events/application/tool-visibility';
import { projectEvent } from '../events/domain/event-projector';
import { EventStreams } from '../events/domain/event-streams';
import { Audience, EventStore, PublicRunEvent, StoredRunEvent } from '../events/domain/run-event';
import { DomainError } from '../../common/errors/domain-error';

const HISTORY_PAGE = 500;

/**
 * What an adapter of any protocol (OpenAI Agents API, AG-UI, ...) needs to follow a session's
 * projected event stream: the live head, the history of the run that was current at a cursor
 * (to rebuild an adapter's own per-run state before it goes on from there), and a subscription
 * from a cursor with a live tail, through the node's one StreamHub (replay, then live, with no
 * gap and no duplicate at the seam). Events are the public projection for the caller's audience,
 * exactly as `/v1/sessions/{id}/events` shows them. Nothing here is on `/v1`'s request path.
 */
@Injectable()
export class SessionEventFeed {
  constructor(
    private readonly store: EventStore,
    private readonly streams: EventStreams,
    private readonly hub: StreamHub,
    private readonly visibility: ToolVisibilityResolver,
  ) {}

  /** The session_sequence of the newest event (0 when none): the cursor of a live start. */
  async head(sessionId: string): Promise<number> {
    return (await this.streams.state(sessionId)).lastSequence;
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

  /** Follows the session from `cursor` (exclusive): history first, then live, in order. `deliver` must not block. */
  follow(sessionId: string, cursor: number, audience: Audience, deliver: (events: PublicRunEvent[]) => void): Subscription {
    return this.hub.subscribe('session', sessionId, cursor, {
      deliver: (events: StoredRunEvent[]) => deliver(events.map((e) => this.project(e, audience))),
    });
  }
}
