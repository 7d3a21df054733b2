import { Injectable, Logger, OnApplicationShutdown, OnModuleInit, Optional } from '@nestjs/common';
import { DbPriority } from '../../../common/database/db-priority';
import { EventNotification, Notifier } from '../domain/notifier';
import { EventStore, StoredRunEvent } from '../domain/run-event';
import { RecentEvents } from './recent-events';

export type StreamKind = 'run' | 'session';

/** One consumer of a stream (an SSE connection). `deliver` must not block; it gets events in order. */
export interface StreamSink {
  deliver(events: StoredRunEvent[]): void;
}

export interface Subscription {
  close(): void;
}

/** A stream followed ahead of a subscription (`reserve`): released by `subscribe` or `release`. */
export interface Reservation {
  release(): void;
}

/**
 * A subscriber's first page, read by the caller AFTER it reserved the stream: the events after
 * its cursor, in order, as one read returned them; `complete` when that read reached the end
 * (it returned fewer rows than it asked for).
 */
export interface Prefetched {
  events: StoredRunEvent[];
  complete: boolean;
}

interface Subscriber {
  sink: StreamSink;
  /** The last position delivered (sequence for runs, session_sequence for sessions). */
  cursor: number;
  closed: boolean;
}

interface Stream {
  key: string;
  kind: StreamKind;
  id: string;
  subscribers: Set<Subscriber>;
  /** Highest position the hub has read for this stream; -1 until the first read. */
  head: number;
  /** Highest position announced (notifications, this node's commits). */
  announced: number;
  /** Read the database even if this node's recent events could serve (after a resync). */
  forceDb: boolean;
  running: boolean;
  dirty: boolean;
  retryTimer: NodeJS.Timeout | null;
  /** Open reservations: the stream is kept (and followed) while it has no subscriber yet. */
  reserved: number;
}

export const HUB_PAGE_SIZE = 500;
/** A joining subscriber's first replay page: small, so its first frame does not wait for 500 rows. */
export const HUB_FIRST_PAGE_SIZE = 32;
const RETRY_MS = 1000;

export function positionOf(kind: StreamKind, e: StoredRunEvent): number {
  return kind === 'run' ? e.sequence : e.sessionSequence;
}

/**
 * One per node. Subscribers register for a run or a session with a cursor; the hub reads new rows
 * ONCE per stream on each notification and fans them out in order. All reads of a stream go
 * through one serialized pump: a new subscriber is caught up from its cursor by reading pages,
 * then shares the live reads; every delivery is filtered by the subscriber's cursor, so the seam
 * between replay and live has no gap and no duplicate. Holds no database connection while idle.
 * Live reads of events this node committed itself are served from `RecentEvents` (no SELECT)
 * when they are there, contiguous and cover what was announced; otherwise from the database.
 */
@Injectable()
export class StreamHub implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('StreamHub');
  private readonly streams = new Map<string, Stream>();
  private unsubscribe: (() => void) | null = null;
  private offRecent: (() => void) | null = null;
  private destroyed = false;

  constructor(
    private readonly store: EventStore,
    private readonly notifier: Notifier,
    @Optional() private readonly recent?: RecentEvents,
  ) {}

  onModuleInit(): void {
    this.unsubscribe = this.notifier.subscribe({
      // The commits this node hands to RecentEvents reach the hub from there (below): their
      // notification, which often arrives before the writer's after-commit hook has handed the
      // events over (a database read of what is about to be given), is skipped.
      onEvents: (n) => {
        if (this.recent === undefined || n.origin !== this.recent.origin) this.onNotification(n);
      },
      onResync: () => {
        for (const s of this.streams.values()) {
          s.forceDb = true;
          this.pump(s);
        }
      },
    });
    // This node's own commits: pump at once (the notification, when it comes, finds the head there).
    this.offRecent =
      this.recent?.onAdded((events) => {
        const last = events[events.length - 1];
        this.onNotification({ sessionId: last.sessionId, runId: last.runId, lastSequence: last.sequence, lastSessionSequence: last.sessionSequence });
      }) ?? null;
  }

  onApplicationShutdown(): void {
    this.destroyed = true;
    this.unsubscribe?.();
    this.offRecent?.();
    for (const s of this.streams.values()) if (s.retryTimer) clearTimeout(s.retryTimer);
    this.streams.clear();
  }

  /** Number of streams and subscribers (metrics, tests). */
  stats(): { streams: number; subscribers: number } {
    let subscribers = 0;
    for (const s of this.streams.values()) subscribers += s.subscribers.size;
    return { streams: this.streams.size, subscribers };
  }

  private streamOf(kind: StreamKind, id: string): Stream {
    const key = `${kind}:${id}`;
    let stream = this.streams.get(key);
    if (!stream) {
      stream = { key, kind, id, subscribers: new Set(), head: -1, announced: 0, forceDb: false, running: false, dirty: false, retryTimer: null, reserved: 0 };
      this.streams.set(key, stream);
      this.recent?.watch(kind, id);
    }
    return stream;
  }

  /** Forgets a stream nobody subscribes to or reserves any more. */
  private dropIfUnused(s: Stream): void {
    if (s.subscribers.size > 0 || s.reserved > 0 || this.streams.get(s.key) !== s) return;
    if (s.retryTimer) clearTimeout(s.retryTimer);
    this.streams.delete(s.key);
    this.recent?.unwatch(s.kind, s.id);
  }

  /**
   * Follows a stream before subscribing to it: from now on, what is committed to it is tracked
   * (notifications, this node's commits), so a first page the caller reads AFTER this call can be
   * handed to `subscribe` (`prefetched`) without a read of the hub's own, and nothing committed
   * after that page's read is missed.
   */
  reserve(kind: StreamKind, id: string): Reservation {
    const s = this.streamOf(kind, id);
    s.reserved++;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        s.reserved--;
        this.dropIfUnused(s);
      },
    };
  }

  /**
   * Delivers every event after `cursor`, then live ones, until closed. With `prefetched` (read
   * after `reservation` was taken, which this releases), its events are delivered at once and
   * the hub reads only what may have been committed after them.
   */
  subscribe(kind: StreamKind, id: string, cursor: number, sink: StreamSink, first?: { reservation: Reservation; prefetched: Prefetched }): Subscription {
    const s = this.streamOf(kind, id);
    const sub: Subscriber = { sink, cursor, closed: false };
    s.subscribers.add(sub);
    if (first) {
      const page = first.prefetched.events.filter((e) => positionOf(kind, e) > cursor);
      this.deliver(s, sub, page);
      // A new stream whose first read this was: its head is where that read ended; what was
      // committed after it has been tracked since the reservation (announced).
      if (s.head < 0 && first.prefetched.complete) s.head = sub.cursor;
      first.reservation.release();
    }
    this.pump(s);
    return {
      close: () => {
        if (sub.closed) return;
        sub.closed = true;
        s.subscribers.delete(sub);
        this.dropIfUnused(s);
      },
    };
  }

  private onNotification(n: EventNotification): void {
    const run = this.streams.get(`run:${n.runId}`);
    if (run) {
      run.announced = Math.max(run.announced, n.lastSequence);
      if (n.lastSequence > run.head) this.pump(run);
    }
    const session = this.streams.get(`session:${n.sessionId}`);
    if (session) {
      session.announced = Math.max(session.announced, n.lastSessionSequence);
      if (n.lastSessionSequence > session.head) this.pump(session);
    }
  }

  /**
   * A live read: from this node's recent commits when they hold the events right after `after`
   * and reach what was announced (or fill the page); else from the database.
   */
  private readLive(s: Stream, after: number, limit: number, useRecent: boolean): Promise<StoredRunEvent[]> | StoredRunEvent[] {
    if (useRecent && this.recent) {
      const page = this.recent.read(s.kind, s.id, after, limit);
      if (page && page.length > 0 && (page.length === limit || positionOf(s.kind, page[page.length - 1]) >= s.announced)) return page;
    }
    return this.read(s, after, limit);
  }

  private read(s: Stream, after: number, limit = HUB_PAGE_SIZE): Promise<StoredRunEvent[]> {
    return s.kind === 'run' ? this.store.readRun(s.id, after, limit) : this.store.readSession(s.id, after, limit);
  }

  private deliver(s: Stream, sub: Subscriber, events: StoredRunEvent[]): void {
    if (sub.closed || events.length === 0) return;
    // Subscribers at the head get the very same array (sinks may cache what they make of it).
    const fresh = positionOf(s.kind, events[0]) > sub.cursor ? events : events.filter((e) => positionOf(s.kind, e) > sub.cursor);
    if (fresh.length === 0) return;
    sub.cursor = positionOf(s.kind, fresh[fresh.length - 1]);
    try {
      sub.sink.deliver(fresh);
    } catch (err) {
      this.logger.error(`sink failed: ${(err as Error).message}`);
    }
  }

  private pump(s: Stream): void {
    if (this.destroyed) return;
    if (s.running) {
      s.dirty = true;
      return;
    }
    s.running = true;
    // Someone is waiting on every read a stream makes. Pumps are started by whoever committed or
    // subscribed, often a run's writer in its after-commit hook at `background` priority, which
    // the drain would inherit: its reads then queued behind every executing run's statements.
    void DbPriority.run('interactive', () => this.drain(s))
      .catch((err) => {
        this.logger.warn(`reading ${s.key} failed (retrying): ${(err as Error).message}`);
        if (!s.retryTimer && !this.destroyed) {
          s.retryTimer = setTimeout(() => {
            s.retryTimer = null;
            if (this.streams.get(s.key) === s) this.pump(s);
          }, RETRY_MS);
          s.retryTimer.unref();
        }
      })
      .finally(() => {
        s.running = false;
        // A notification may have arrived between the last check and now.
        if (s.dirty && !s.retryTimer && this.streams.get(s.key) === s) this.pump(s);
      });
  }

  private async drain(s: Stream): Promise<void> {
    do {
      s.dirty = false;
      if (s.subscribers.size === 0) return;
      // A stream's first read serves subscribers that just joined: a small page gets their first
      // frame out without waiting for a full page of rows.
      let liveLimit = HUB_PAGE_SIZE;
      const isNew = s.head < 0;
      if (isNew) {
        s.head = Math.min(...[...s.subscribers].map((x) => x.cursor));
        liveLimit = HUB_FIRST_PAGE_SIZE;
      }
      // Catch up subscribers that joined behind the head (their own replay, page by page).
      for (const sub of [...s.subscribers]) {
        let limit = HUB_FIRST_PAGE_SIZE;
        while (!sub.closed && sub.cursor < s.head) {
          const page = await this.read(s, sub.cursor, limit);
          this.deliver(s, sub, page);
          if (page.length < limit) break;
          limit = HUB_PAGE_SIZE;
        }
        // It reached the end of what is committed below the head (the head came from a cursor
        // beyond the data, or rows were purged): read live from there; cursors filter duplicates.
        if (!sub.closed && sub.cursor < s.head) s.head = sub.cursor;
      }
      // Live: read what is new after the head once, for everyone.
      const useRecent = !s.forceDb;
      s.forceDb = false;
      // Nothing announced beyond the head of a stream served from recent commits: no read (a
      // notification that came while the last round ran marked it dirty, but was served by it).
      const upToDate = useRecent && this.recent !== undefined && !isNew && s.head >= s.announced;
      for (;;) {
        if (s.subscribers.size === 0 || upToDate) break;
        const from = s.head;
        const limit = liveLimit;
        liveLimit = HUB_PAGE_SIZE;
        const page = await this.readLive(s, from, limit, useRecent);
        if (page.length === 0) break;
        s.head = positionOf(s.kind, page[page.length - 1]);
        for (const sub of [...s.subscribers]) {
          // A subscriber that joined behind `from` during the read is not caught up yet: giving it
          // this page would skip its gap. The next round replays it first.
          if (sub.cursor < from) s.dirty = true;
          else this.deliver(s, sub, page);
        }
        if (page.length < limit) break;
      }
    } while (s.dirty && !this.destroyed);
  }
}
