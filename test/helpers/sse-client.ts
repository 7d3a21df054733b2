import { createParser, EventSourceMessage } from 'eventsource-parser';

/** One SSE event as a client sees it; `json` is `data` parsed as JSON when it is JSON. */
export interface SseEvent {
  id: string | undefined;
  event: string | undefined;
  data: string;
  json: any;
}

export interface SseStream {
  status: number;
  headers: Headers;
  /** The body when the response was not a stream (errors): parsed JSON or text. */
  errorBody: any;
  /** `retry:` values and comments seen so far (e.g. `keep-alive`). */
  retries: number[];
  comments: string[];
  /** Events in arrival order, as an async iterator (ends when the server closes the stream). */
  events: AsyncIterableIterator<SseEvent>;
  /** The next event, or null when the stream ended; rejects after `timeoutMs`. */
  next(timeoutMs?: number): Promise<SseEvent | null>;
  /** Events until (and including) the first of type `untilType`, or until the stream ends. */
  collect(untilType?: string, timeoutMs?: number): Promise<SseEvent[]>;
  /** Resolves once the server has closed the stream. */
  ended: Promise<void>;
  close(): void;
}

/**
 * A real SSE client for tests: `fetch` + the `eventsource-parser` package (a maintained WHATWG
 * event-stream parser). `openSse(url, { headers })` resolves once the response headers arrived.
 */
export async function openSse(url: string, opts: { headers?: Record<string, string> } = {}): Promise<SseStream> {
  const controller = new AbortController();
  const res = await fetch(url, {
    headers: { accept: 'text/event-stream', ...(opts.headers ?? {}) },
    signal: controller.signal,
  });
  const queue: SseEvent[] = [];
  const waiters: Array<() => void> = [];
  const retries: number[] = [];
  const comments: string[] = [];
  let done = false;
  let markEnded!: () => void;
  const ended = new Promise<void>((r) => (markEnded = r));
  const wake = () => {
    for (const w of waiters.splice(0)) w();
  };
  const finish = () => {
    done = true;
    markEnded();
    wake();
  };

  let errorBody: any = undefined;
  const isStream = res.status === 200 && (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
  if (!isStream) {
    const text = await res.text().catch(() => '');
    try {
      errorBody = text ? JSON.parse(text) : undefined;
    } catch {
      errorBody = text;
    }
    finish();
  } else {
    const parser = createParser({
      onEvent: (m: EventSourceMessage) => {
        let json: unknown = undefined;
        try {
          json = JSON.parse(m.data);
        } catch {
          json = undefined;
        }
        queue.push({ id: m.id, event: m.event, data: m.data, json });
        wake();
      },
      onRetry: (ms: number) => retries.push(ms),
      onComment: (c: string) => comments.push(c.trim()),
    });
    void (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
      } catch {
        /* aborted or reset: the stream is over */
      } finally {
        finish();
      }
    })();
  }

  const next = async (timeoutMs = 5000): Promise<SseEvent | null> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (queue.length) return queue.shift()!;
      if (done) return null;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no SSE event within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  };

  const events: AsyncIterableIterator<SseEvent> = {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      const e = await next();
      return e ? { value: e, done: false } : { value: undefined, done: true };
    },
  };

  return {
    status: res.status,
    headers: res.headers,
    errorBody,
    retries,
    comments,
    events,
    next,
    ended,
    async collect(untilType?: string, timeoutMs = 5000) {
      const out: SseEvent[] = [];
      for (;;) {
        const e = await next(timeoutMs);
        if (!e) return out;
        out.push(e);
        if (untilType && e.event === untilType) return out;
      }
    },
    close() {
      controller.abort();
      finish();
    },
  };
}
