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

/** A minimal SSE client: fetch + eventsource-parser; bounded in time; never buffers frames. */
export async function readSse(url: string, opts: SseOptions): Promise<SseResult> {
  const controller = new AbortController();
  let stop = false;
  let end: SseResult['end'] = 'closed';
  const timer = setTimeout(() => {
    end = 'timeout';
    controller.abort();
  }, opts.timeoutMs);
  const onAbort = () => {
    stop = true;
    controller.abort();
  };
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  let frames = 0;
  let status = 0;
  try {
    const res = await fetch(url, { headers: { accept: 'text/event-stream', ...(opts.headers ?? {}) }, signal: controller.signal });
    status = res.status;
    opts.onOpen?.(status, performance.now());
    if (status !== 200 || !res.body) {
      await res.arrayBuffer().catch(() => undefined);
      return { status, frames, end: 'closed' };
    }
    const parser = createParser({
      onEvent: (m: EventSourceMessage) => {
        if (stop) return;
        frames++;
        if (opts.onFrame({ id: m.id, event: m.event, data: m.data, at: Date.now(), perf: performance.now() })) stop = true;
      },
    });
    const decoder = new TextDecoder();
    const reader = res.body.getReader();
    while (!stop) {
      const { value, done } = await reader.read();
      if (done) break;
      parser.feed(decoder.decode(value, { stream: true }));
    }
    if (stop) {
      end = 'stopped';
      controller.abort();
    }
    return { status, frames, end };
  } catch (err) {
    if ((end as SseResult['end']) === 'timeout') return { status, frames, end: 'timeout' };
    if (stop) return { status, frames, end: 'stopped' };
    return { status, frames, end: 'error', error: (err as Error).message };
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
  }
}
