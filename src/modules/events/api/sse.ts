import type { ServerResponse } from 'node:http';

export interface SseFrame {
  id?: string | number;
  event?: string;
  data?: string;
  retry?: number;
  comment?: string;
}

const LINE_BREAK = /\r\n|\r|\n/;

function noBreaks(field: string, value: string): string {
  if (LINE_BREAK.test(value)) throw new Error(`SSE ${field} must not contain line breaks`);
  return value;
}

/**
 * Encodes one Server-Sent Events frame (WHATWG HTML "event stream" format). Multi-line `data`
 * and comments become one line each; `id` and `event` must be single-line. Ends with a blank line.
 */
export function encodeSseFrame(frame: SseFrame): string {
  let out = '';
  if (frame.comment !== undefined) for (const line of frame.comment.split(LINE_BREAK)) out += `: ${line}\n`;
  if (frame.retry !== undefined) {
    if (!Number.isInteger(frame.retry) || frame.retry < 0) throw new Error('SSE retry must be a non-negative integer');
    out += `retry: ${frame.retry}\n`;
  }
  if (frame.id !== undefined) {
    const id = noBreaks('id', String(frame.id));
    if (id.includes('\0')) throw new Error('SSE id must not contain NUL');
    out += `id: ${id}\n`;
  }
  if (frame.event !== undefined) out += `event: ${noBreaks('event', frame.event)}\n`;
  if (frame.data !== undefined) for (const line of frame.data.split(LINE_BREAK)) out += `data: ${line}\n`;
  if (out === '') throw new Error('empty SSE frame');
  return `${out}\n`;
}

/**
 * Comment lines (`: text`) WITHOUT the blank line that ends a frame. Every parser ignores a comment
 * line, but a blank line dispatches a message in some (`@microsoft/fetch-event-source` hands its
 * caller an empty message for `: keep-alive\n\n`): on this wire a blank line only ever ends an event.
 */
export function encodeSseComment(comment: string): string {
  let out = '';
  for (const line of comment.split(LINE_BREAK)) out += `: ${line}\n`;
  return out;
}

/** One media range of an `Accept` header (RFC 9110 section 12.5.1), lower-cased; `q` in [0, 1]. */
export interface MediaRange {
  type: string;
  subtype: string;
  q: number;
}

/** Splits `value` on `sep` outside double-quoted strings (quoted-pairs included). */
function splitOutsideQuotes(value: string, sep: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (quoted && c === '\\' && i + 1 < value.length) {
      current += c + value[++i];
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (c === sep && !quoted) {
      parts.push(current);
      current = '';
    } else {
      current += c;
    }
  }
  parts.push(current);
  return parts;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;

/**
 * Parses an `Accept` header into its media ranges, in order. Parameters other than `q` are
 * ignored (so are the accept-extensions after it); a bare `*` is read as `*\/*`; malformed
 * ranges are skipped. A `q` that is not a number counts as 0 (not acceptable); others are
 * clamped to [0, 1]. Several headers (an array) are read as one comma-separated list.
 */
export function parseAccept(header: string | string[] | undefined): MediaRange[] {
  const text = Array.isArray(header) ? header.join(',') : (header ?? '');
  const ranges: MediaRange[] = [];
  for (const element of splitOutsideQuotes(text, ',')) {
    const [range, ...params] = splitOutsideQuotes(element, ';').map((p) => p.trim());
    if (!range) continue;
    const [type, subtype, extra] = (range === '*' ? '*/*' : range).toLowerCase().split('/');
    if (extra !== undefined || !type || !subtype || !TOKEN.test(type) || !TOKEN.test(subtype) || (type === '*' && subtype !== '*')) continue;
    let q = 1;
    for (const param of params) {
      const eq = param.indexOf('=');
      if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== 'q') continue;
      const value = param.slice(eq + 1).trim();
      q = /^\d+(\.\d*)?$|^\.\d+$/.test(value) ? Math.min(1, Number(value)) : 0;
      break;
    }
    ranges.push({ type, subtype, q });
  }
  return ranges;
}

/**
 * The quality `ranges` give `type/subtype`: that of the most specific range matching it
 * (`type/subtype` over `type/*` over `*\/*`; the highest q among equally specific ones), 0 when none does.
 */
export function qualityOf(ranges: MediaRange[], type: string, subtype: string): number {
  let best = -1;
  let q = 0;
  for (const r of ranges) {
    const specificity = r.type === type && r.subtype === subtype ? 2 : r.type === type && r.subtype === '*' ? 1 : r.type === '*' ? 0 : -1;
    if (specificity < 0 || specificity < best) continue;
    q = specificity > best ? r.q : Math.max(q, r.q);
    best = specificity;
  }
  return q;
}

/**
 * Content negotiation of the events endpoints (CONTRACT section 8): `text/event-stream` gives
 * the SSE stream, anything else a JSON page. The stream is chosen only when the client names
 * `text/event-stream` itself (wildcards such as `*\/*` or `text/*` keep JSON, the default) with a
 * q above 0 and not below the q it gives `application/json` (a tie goes to SSE, as naming
 * `text/event-stream` always did). So `text/event-stream;q=0, application/json` is JSON and
 * `application/json;q=0.5, text/event-stream` is SSE. Nothing is acceptable: JSON (no 406).
 */
export function wantsEventStream(accept: string | string[] | undefined): boolean {
  const ranges = parseAccept(accept);
  let sse = -1;
  for (const r of ranges) if (r.type === 'text' && r.subtype === 'event-stream') sse = Math.max(sse, r.q);
  if (sse <= 0) return false;
  return sse >= qualityOf(ranges, 'application', 'json');
}

export interface SseConnectionOptions {
  keepaliveMs: number;
  /** Bytes the socket may hold unsent; beyond this the client is too slow and the stream is closed. */
  maxBufferedBytes: number;
}

const KEEP_ALIVE = encodeSseComment('keep-alive');

export type SseCloseReason = 'client' | 'server' | 'slow_client';

/**
 * One open SSE response on a raw Node response (Fastify `reply.hijack()`). Writes frames, sends
 * keep-alive comments, and closes the stream rather than buffering without bound when the client
 * does not read (it resumes from its cursor).
 */
export class SseConnection {
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** The `retry:` line, until the first write carries it. */
  private pendingRetry: string | null = null;
  private readonly closeHandlers: Array<(reason: SseCloseReason) => void> = [];

  constructor(
    private readonly raw: ServerResponse,
    private readonly options: SseConnectionOptions,
  ) {
    raw.on('close', () => this.finish('client'));
    raw.on('error', () => this.finish('client'));
  }

  get isClosed(): boolean {
    return this.closed;
  }

  open(headers: Record<string, string>, retryMs: number): void {
    if (this.raw.destroyed) {
      this.finish('client');
      return;
    }
    this.raw.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
      // The same URL answers JSON or SSE by Accept: caches must key on it.
      vary: 'Accept',
      connection: 'keep-alive',
      ...headers,
    });
    // Headers, `retry:` and whatever the opener writes in the same tick (a first page of events)
    // leave in one write. `retry:` is the first line of the first event's frame, not a frame of its
    // own (a bare `retry: 3000\n\n` is an empty message to some clients); with no event to send in
    // this tick it goes alone, as a field line: parsers apply it at once and dispatch nothing.
    this.pendingRetry = `retry: ${retryMs}\n`;
    this.raw.cork();
    process.nextTick(() => {
      if (this.pendingRetry !== null) this.write('');
      this.uncork();
    });
    this.raw.flushHeaders();
    this.timer = setInterval(() => this.write(KEEP_ALIVE), this.options.keepaliveMs);
    this.timer.unref();
  }

  onClose(handler: (reason: SseCloseReason) => void): void {
    this.closeHandlers.push(handler);
  }

  /** Writes a frame; false when the stream is closed (or was just closed for being too slow). */
  send(frame: SseFrame): boolean {
    return this.write(encodeSseFrame(frame));
  }

  write(chunk: string | Buffer): boolean {
    if (this.closed) return false;
    if (this.pendingRetry !== null) {
      chunk = typeof chunk === 'string' ? this.pendingRetry + chunk : Buffer.concat([Buffer.from(this.pendingRetry), chunk]);
      this.pendingRetry = null;
    }
    const ok = this.raw.write(chunk);
    if (!ok && this.raw.writableLength > this.options.maxBufferedBytes) {
      this.finish('slow_client');
      this.raw.destroy();
      return false;
    }
    return true;
  }

  /** Ends the stream cleanly (after run.finished, on shutdown). */
  end(): void {
    if (this.closed) return;
    this.finish('server');
    // Still corked (ended in the tick it opened: a finished run's replay): Node 22+ drops what a
    // corked response holds when it ends, so the frames are let out first.
    this.uncork();
    this.raw.end();
  }

  private uncork(): void {
    while (this.raw.writableCorked > 0) this.raw.uncork();
  }

  private finish(reason: SseCloseReason): void {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    for (const h of this.closeHandlers.splice(0)) {
      try {
        h(reason);
      } catch {
        /* a close handler must not break the others */
      }
    }
  }
}
