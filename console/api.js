// Agent API access for the console: JSON calls with the error envelope, and an SSE reader over
// fetch (so the Authorization header can be sent) that resumes with Last-Event-ID.

export class ApiError extends Error {
  constructor(status, body, requestId) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status;
    this.code = e.code || `http_${status}`;
    this.retryable = e.retryable === true || status === 0 || status === 429 || status >= 500;
    this.requestId = e.request_id || requestId || null;
    this.details = e.details || {};
  }
}

export class Api {
  constructor(key) {
    this.key = key;
  }

  headers(extra = {}) {
    return { authorization: `Bearer ${this.key}`, ...extra };
  }

  async call(method, path, { query, body } = {}) {
    const url = new URL(path, location.origin);
    for (const [k, v] of Object.entries(query || {})) if (v !== undefined && v !== null && v !== '') url.searchParams.set(k, String(v));
    const headers = this.headers({ accept: 'application/json' });
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (method === 'POST' || method === 'PUT' || method === 'DELETE') headers['idempotency-key'] = crypto.randomUUID();
    let res;
    try {
      res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch (err) {
      throw new ApiError(0, { error: { code: 'network_error', message: `cannot reach the service (${err.message})` } });
    }
    const text = await res.text();
    let parsed;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (!res.ok) throw new ApiError(res.status, parsed, res.headers.get('x-request-id'));
    return parsed;
  }

  get(path, query) {
    return this.call('GET', path, { query });
  }

  /** A file the service streams (the audit export): its body as a Blob and the name it suggests. */
  async download(path, query) {
    const url = new URL(path, location.origin);
    for (const [k, v] of Object.entries(query || {})) if (v !== undefined && v !== null && v !== '') url.searchParams.set(k, String(v));
    let res;
    try {
      res = await fetch(url, { headers: this.headers() });
    } catch (err) {
      throw new ApiError(0, { error: { code: 'network_error', message: `cannot reach the service (${err.message})` } });
    }
    if (!res.ok) {
      const text = await res.text();
      let parsed;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      throw new ApiError(res.status, parsed, res.headers.get('x-request-id'));
    }
    const name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') || '')?.[1] || 'audit-export';
    return { blob: await res.blob(), name };
  }
  post(path, body = {}) {
    return this.call('POST', path, { body });
  }
  put(path, body = {}) {
    return this.call('PUT', path, { body });
  }
  del(path) {
    return this.call('DELETE', path);
  }
}

/** Minimal text/event-stream parser: calls onFrame({id, event, data}) and onRetry(ms). */
function sseParser(onFrame, onRetry) {
  let buf = '';
  let frame = { data: [] };
  const line = (l) => {
    if (l === '') {
      if (frame.data.length) onFrame({ id: frame.id, event: frame.event || 'message', data: frame.data.join('\n') });
      frame = { data: [], id: undefined, event: undefined };
      return;
    }
    if (l.startsWith(':')) return;
    const i = l.indexOf(':');
    const field = i < 0 ? l : l.slice(0, i);
    let value = i < 0 ? '' : l.slice(i + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') frame.data.push(value);
    else if (field === 'id') frame.id = value;
    else if (field === 'event') frame.event = value;
    else if (field === 'retry' && /^\d+$/.test(value)) onRetry(Number(value));
  };
  return (chunk) => {
    buf += chunk;
    const parts = buf.split(/\r\n|\r|\n/);
    buf = parts.pop();
    for (const p of parts) line(p);
  };
}

/**
 * Reads a run's events (SSE) and calls onEvent(envelope) for each, once and in order. A dropped
 * connection is resumed with Last-Event-ID after a backoff; resolves after `run.finished`.
 * Rejects on permanent errors (401/404/410) or after `maxAttempts` consecutive failures.
 */
export async function followRun(api, runId, { onEvent, onReconnect, signal, maxAttempts = 8 } = {}) {
  let lastId = null;
  let failures = 0;
  for (;;) {
    if (signal && signal.aborted) return null;
    let received = 0;
    let reason = 'stream ended';
    try {
      const headers = api.headers({ accept: 'text/event-stream' });
      if (lastId !== null) headers['last-event-id'] = lastId;
      const res = await fetch(`/v1/runs/${encodeURIComponent(runId)}/events`, { headers, signal, cache: 'no-store' });
      if (!res.ok) {
        let body;
        try {
          body = await res.json();
        } catch {
          body = undefined;
        }
        throw new ApiError(res.status, body, res.headers.get('x-request-id'));
      }
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      const frames = [];
      const feed = sseParser((f) => frames.push(f), () => undefined);
      let finished = null;
      try {
        while (!finished) {
          const { done, value } = await reader.read();
          if (done) break;
          feed(decoder.decode(value, { stream: true }));
          while (frames.length && !finished) {
            const f = frames.shift();
            if (f.id !== undefined && lastId !== null && Number(f.id) <= Number(lastId)) continue;
            if (f.id !== undefined) lastId = f.id;
            const ev = JSON.parse(f.data);
            received++;
            failures = 0;
            onEvent(ev);
            if (ev.type === 'run.finished') finished = ev;
          }
        }
      } finally {
        reader.cancel().catch(() => undefined);
      }
      if (finished) return finished;
    } catch (err) {
      if (signal && signal.aborted) return null;
      if (err instanceof ApiError && !err.retryable) throw err;
      reason = err.message || String(err);
    }
    if (received === 0) failures++;
    if (failures >= maxAttempts) throw new ApiError(0, { error: { code: 'stream_failed', message: `the event stream failed: ${reason}` } });
    const delay = Math.min(5000, 250 * 2 ** Math.max(0, failures - 1));
    if (onReconnect) onReconnect({ lastEventId: lastId, delay, reason });
    await new Promise((r) => setTimeout(r, delay));
  }
}
