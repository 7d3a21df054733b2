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

export interface SseConnectionOptions {
  keepaliveMs: number;
  /** Bytes the socket may hold unsent; beyond this the client is too slow and the stream is closed. */
  maxBufferedBytes: number;
}

export type SseCloseReason = 'client' | 'server' | 'slow_client';

/**
 * One open SSE response on a raw Node response (Fastify `reply.hijack()`). Writes frames, sends
 * keep-alive comments, and closes the stream rather than buffering without bound when the client
 * does not read (it resumes from its cursor).
 */
export class SseConnection {
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
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
      connection: 'keep-alive',
      ...headers,
    });
    this.raw.flushHeaders();
    this.send({ retry: retryMs });
    this.timer = setInterval(() => this.send({ comment: 'keep-alive' }), this.options.keepaliveMs);
    this.timer.unref();
  }

  onClose(handler: (reason: SseCloseReason) => void): void {
    this.closeHandlers.push(handler);
  }

  /** Writes a frame; false when the stream is closed (or was just closed for being too slow). */
  send(frame: SseFrame): boolean {
    return this.write(encodeSseFrame(frame));
  }

  write(chunk: string): boolean {
    if (this.closed) return false;
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
    this.raw.end();
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
