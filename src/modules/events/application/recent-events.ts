import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import type { StoredRunEvent } from '../domain/run-event';

export type RecentStreamKind = 'run' | 'session';

/** Events kept per watched stream, and in all. */
export const RECENT_PER_STREAM = 256;
export const RECENT_TOTAL = 20_000;

interface Entry {
  kind: RecentStreamKind;
  /** Sorted by position, unique positions. */
  events: StoredRunEvent[];
}

const positionOf = (kind: RecentStreamKind, e: StoredRunEvent) => (kind === 'run' ? e.sequence : e.sessionSequence);

/**
 * The events this node committed most recently, for the streams its StreamHub is serving: the
 * hub's live reads are served from here instead of a SELECT per notification (the events were
 * in this process a moment ago). Only watched streams are kept, a bounded number of events each
 * and in all. A read is answered only with the events right after the cursor, contiguous (the
 * positions are gap-free in the database, so a contiguous run of committed positions is exactly
 * what a SELECT would return for them); anything else - events written by another node, evicted,
 * or committed before the stream was watched - answers `null` and the hub reads the database.
 *
 * `add` is called by the event store AFTER its transaction committed, with what it wrote; the
 * data is copied through JSON with jsonb's key order, so an event served from here is
 * byte-for-byte what a read from the database gives.
 */
@Injectable()
export class RecentEvents {
  /** This process's mark on the notifications of the commits it hands over (EventNotification.origin). */
  readonly origin = randomBytes(8).toString('hex');
  private readonly entries = new Map<string, Entry>();
  private readonly watched = new Map<string, number>();
  private readonly listeners = new Set<(events: StoredRunEvent[]) => void>();
  private total = 0;

  /** Starts keeping a stream's events (counted: as many unwatch calls end it). */
  watch(kind: RecentStreamKind, id: string): void {
    const key = `${kind}:${id}`;
    this.watched.set(key, (this.watched.get(key) ?? 0) + 1);
  }

  unwatch(kind: RecentStreamKind, id: string): void {
    const key = `${kind}:${id}`;
    const n = (this.watched.get(key) ?? 0) - 1;
    if (n > 0) {
      this.watched.set(key, n);
      return;
    }
    this.watched.delete(key);
    this.drop(key);
  }

  /** True when a stream of this run or session is watched (the writer prepares copies only then). */
  wants(runId: string, sessionId: string): boolean {
    return this.watched.has(`run:${runId}`) || this.watched.has(`session:${sessionId}`);
  }

  /** Called with each committed append (one run, one session, in position order). */
  add(events: StoredRunEvent[]): void {
    if (events.length === 0) return;
    const first = events[0];
    let kept = false;
    for (const [kind, id] of [
      ['run', first.runId],
      ['session', first.sessionId],
    ] as Array<[RecentStreamKind, string]>) {
      const key = `${kind}:${id}`;
      if (!this.watched.has(key)) continue;
      kept = true;
      let entry = this.entries.get(key);
      if (!entry) {
        entry = { kind, events: [] };
        this.entries.set(key, entry);
      } else {
        // Most recently written last: eviction takes the least recently written stream first.
        this.entries.delete(key);
        this.entries.set(key, entry);
      }
      // A batch that ends right before what is here (an earlier commit seen late) goes in backwards.
      const before = entry.events.length > 0 && positionOf(kind, events[events.length - 1]) < positionOf(kind, entry.events[0]);
      for (const e of before ? [...events].reverse() : events) this.insert(entry, e);
      const over = entry.events.length - RECENT_PER_STREAM;
      if (over > 0) {
        entry.events.splice(0, over);
        this.total -= over;
      }
    }
    if (!kept) return;
    while (this.total > RECENT_TOTAL) {
      const oldest = this.entries.keys().next().value as string;
      this.drop(oldest);
    }
    for (const l of [...this.listeners]) l(events);
  }

  /**
   * Up to `limit` events right after `after`, contiguous; `null` when the first of them
   * (`after + 1`) is not here. The caller checks that the last one reaches what was announced.
   */
  read(kind: RecentStreamKind, id: string, after: number, limit: number): StoredRunEvent[] | null {
    const entry = this.entries.get(`${kind}:${id}`);
    if (!entry || entry.events.length === 0) return null;
    const start = positionOf(kind, entry.events[0]);
    const idx = after + 1 - start;
    if (idx < 0 || idx >= entry.events.length) return null;
    const out: StoredRunEvent[] = [];
    let expect = after + 1;
    for (let i = idx; i < entry.events.length && out.length < limit; i++) {
      const e = entry.events[i];
      if (positionOf(kind, e) !== expect) break;
      out.push(e);
      expect++;
    }
    return out;
  }

  /** Called after each `add` that kept something (the hub pumps the streams). */
  onAdded(listener: (events: StoredRunEvent[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Streams and events held (metrics, tests). */
  stats(): { streams: number; events: number } {
    return { streams: this.entries.size, events: this.total };
  }

  private drop(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.total -= entry.events.length;
    this.entries.delete(key);
  }

  /**
   * Keeps `events` sorted and contiguous from its first position: commits of one session can be
   * seen here out of order (two transactions' after-commit hooks). An event that would leave a
   * gap before it (one written elsewhere is missing) restarts the entry from itself.
   */
  private insert(entry: Entry, e: StoredRunEvent): void {
    const ev = entry.events;
    const pos = positionOf(entry.kind, e);
    if (ev.length === 0) {
      ev.push(e);
      this.total++;
      return;
    }
    const first = positionOf(entry.kind, ev[0]);
    const last = positionOf(entry.kind, ev[ev.length - 1]);
    if (pos === last + 1) {
      ev.push(e);
      this.total++;
    } else if (pos > last + 1 || pos < first - RECENT_PER_STREAM) {
      // A gap (another writer's events are not here) or far behind: start over from here.
      this.total -= ev.length;
      ev.length = 0;
      ev.push(e);
      this.total++;
    } else if (pos >= first) {
      // Already here (same position): nothing to do.
    } else {
      // Before the first one: an earlier commit seen late. Keep only if it is contiguous.
      if (pos === first - 1) {
        ev.unshift(e);
        this.total++;
      }
    }
  }
}
