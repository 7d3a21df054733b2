import type { ClientRequest } from 'node:http';
import { get as httpGet } from 'node:http';
import { createParser, EventSourceMessage } from 'eventsource-parser';

export interface SseFrame {
  id: string | undefined;
  event: string | undefined;
  data: string;
  /** Client receipt time: Date.now() (cross-process delays) and performance.now() (intervals). */
  at: number;
  perf: number;
}

export interface SseOptions {
  headers?: Record<string, string>;
  /** Called for every event frame; return true to stop reading (the stream is then aborted). */
  onFrame: (f: SseFrame) => boolean | void;
  /** Called once the response headers arrived (status known). */
  onOpen?: (status: number, perf: number) => void;
  /** Hard bound on the stream's life. */
  timeoutMs: number;
  /** Aborts the stream from outside (end 'stopped'). */
  signal?: AbortSignal;
}

export interface SseResult {
  status: number;
  frames: number;
  /** Why reading stopped: the callback asked, the server closed, the bound hit, or an error. */
  end: 'stopped' | 'closed' | 'timeout' | 'error';
  error?: string;
}

/**
 * A minimal SSE client: node:http + eventsource-parser, bounded in time, never buffering frames.
 * (node:http rather than fetch: with 1,000 streams in one process, WHATWG streams cost the
 * client enough CPU to show up in the measured delays.)
 */
export function readSse(url: string, opts: SseOptions): Promise<SseResult> {
  return new Promise<SseResult>((resolve) => {
    let frames = 0;
    let status = 0;
    let settled = false;
    let req: ClientRequest | null = null;
    const done = (end: SseResult['end'], error?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      req?.destroy();
      resolve({ status, frames, end, ...(error ? { error } : {}) });
    };
    const timer = setTimeout(() => done('timeout'), opts.timeoutMs);
    const onAbort = () => done('stopped');
    if (opts.signal?.aborted) return done('stopped');
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const parser = createParser({
      onEvent: (m: EventSourceMessage) => {
        if (settled) return;
        frames++;
        if (opts.onFrame({ id: m.id, event: m.event, data: m.data, at: Date.now(), perf: performance.now() })) done('stopped');
      },
    });
    req = httpGet(url, { headers: { accept: 'text/event-stream', ...(opts.headers ?? {}) }, agent: false }, (res) => {
      status = res.statusCode ?? 0;
      opts.onOpen?.(status, performance.now());
      if (status !== 200) {
        res.resume();
        res.on('end', () => done('closed'));
        return;
      }
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        try {
          parser.feed(chunk);
        } catch (err) {
          done('error', (err as Error).message);
        }
      });
      res.on('end', () => done('closed'));
      res.on('error', (err) => done('error', err.message));
    });
    req.on('error', (err) => done(settled ? 'stopped' : 'error', err.message));
  });
}
