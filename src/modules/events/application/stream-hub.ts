import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { EventNotification, Notifier } from '../domain/notifier';
import { EventStore, StoredRunEvent } from '../domain/run-event';

export type StreamKind = 'run' | 'session';

/** One consumer of a stream (an SSE connection). `deliver` must not block; it gets events in order. */
export interface StreamSink {
  deliver(events: StoredRunEvent[]): void;
}

export interface Subscription {
  close(): void;
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
  running: boolean;
  dirty: boolean;
  retryTimer: NodeJS.Timeout | null;
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
 */
@Injectable()
export class StreamHub implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('StreamHub');
  private readonly streams = new Map<string, Stream>();
  private unsubscribe: (() => void) | null = null;
  private destroyed = false;

  constructor(
    private readonly store: EventStore,
    private readonly notifier: Notifier,
  ) {}

  onModuleInit(): void {
    this.unsubscribe = this.notifier.subscribe({
      onEvents: (n) => this.onNotification(n),
      onResync: () => {
        for (const s of this.streams.values()) this.pump(s);
      },
    });
  }

  onApplicationShutdown(): void {
    this.destroyed = true;
    this.unsubscribe?.();
    for (const s of this.streams.values()) if (s.retryTimer) clearTimeout(s.retryTimer);
    this.streams.clear();
  }

  /** Number of streams and subscribers (metrics, tests). */
  stats(): { streams: number; subscribers: number } {
    let subscribers = 0;
    for (const s of this.streams.values()) subscribers += s.subscribers.size;
    return { streams: this.streams.size, subscribers };
  }

  /** Delivers every event after `cursor`, then live ones, until closed. */
  subscribe(kind: StreamKind, id: string, cursor: number, sink: StreamSink): Subscription {
    const key = `${kind}:${id}`;
    let stream = this.streams.get(key);
    if (!stream) {
      stream = { key, kind, id, subscribers: new Set(), head: -1, running: false, dirty: false, retryTimer: null };
      this.streams.set(key, stream);
    }
    const sub: Subscriber = { sink, cursor, closed: false };
    stream.subscribers.add(sub);
    const s = stream;
    this.pump(s);
    return {
      close: () => {
        if (sub.closed) return;
        sub.closed = true;
        s.subscribers.delete(sub);
        if (s.subscribers.size === 0 && this.streams.get(key) === s) {
          if (s.retryTimer) clearTimeout(s.retryTimer);
          this.streams.delete(key);
        }
      },
    };
  }

  private onNotification(n: EventNotification): void {
    const run = this.streams.get(`run:${n.runId}`);
    if (run && n.lastSequence > run.head) this.pump(run);
    const session = this.streams.get(`session:${n.sessionId}`);
    if (session && n.lastSessionSequence > session.head) this.pump(session);
  }

  private read(s: Stream, after: number, limit = HUB_PAGE_SIZE): Promise<StoredRunEvent[]> {
    return s.kind === 'run' ? this.store.readRun(s.id, after, limit) : this.store.readSession(s.id, after, limit);
  }

  private deliver(s: Stream, sub: Subscriber, events: StoredRunEvent[]): void {
    if (sub.closed) return;
    const fresh = events.filter((e) => positionOf(s.kind, e) > sub.cursor);
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
    void this.drain(s)
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
      if (s.head < 0) {
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
      for (;;) {
        if (s.subscribers.size === 0) return;
        const from = s.head;
        const limit = liveLimit;
        liveLimit = HUB_PAGE_SIZE;
        const page = await this.read(s, from, limit);
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
