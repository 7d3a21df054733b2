/**
 * The one guarded HTTP client for every call this service makes to a URL someone configured
 * (http and mcp tools, webhooks; CONTRACT section 13): only URLs inside OUTBOUND_URL_ALLOWLIST,
 * redirects never followed, a deadline per call, response bodies capped. Callers get either an
 * `OutboundResponse` or an `OutboundError` with a `kind` to branch on - never a raw fetch error.
 */

import * as http from 'node:http';
import * as https from 'node:https';

/** Why an outbound call did not produce a response. */
export type OutboundErrorKind = 'not_allowed' | 'timeout' | 'aborted' | 'network' | 'too_large';

export class OutboundError extends Error {
  constructor(
    readonly kind: OutboundErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'OutboundError';
  }

  /** A later attempt may succeed (the contract retries these for idempotent tools and webhooks). */
  get retryable(): boolean {
    return this.kind === 'timeout' || this.kind === 'network';
  }
}

interface AllowEntry {
  protocol: string;
  hostname: string;
  /** null = any port (`host:*`); else the port, the scheme's default when the entry names none. */
  port: number | null;
  /** Path prefix ending in '/'. */
  path: string;
}

const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443 };
/** `scheme://host:*` with an optional path: `new URL` cannot parse the `*`. */
const ANY_PORT_RE = /^(https?:\/\/(?:\[[^\]]*\]|[^/?#@:]+)):\*(?=$|[/?#])/i;
/** An encoded `/` or `\` in a path: a proxy that decodes before resolving would let `/ok/..%2fadmin` escape the prefix. */
const ENCODED_SEPARATOR_RE = /%(2f|5c)/i;

/** The port a parsed URL reaches: its own, else the scheme's default (URL parsing drops a default port). */
function portOf(u: URL): number {
  return u.port === '' ? DEFAULT_PORTS[u.protocol] : Number(u.port);
}

/** An allow-list entry as text to parts; throws on what `entryProblem` reports. */
function parseEntry(raw: string): { url: URL; anyPort: boolean } {
  const m = ANY_PORT_RE.exec(raw.trim());
  const url = new URL(m ? raw.trim().replace(ANY_PORT_RE, '$1') : raw.trim());
  return { url, anyPort: m !== null };
}

/**
 * The allow-list: each entry is a URL prefix (`https://api.example.com/tools/`, `http://127.0.0.1:*`).
 * Matching is by parsed parts, not by text: scheme and host must be equal (so
 * `http://127.0.0.1.evil.example` and `http://127.0.0.1@evil.example` do not match `http://127.0.0.1`);
 * the port must be the entry's, which is the scheme's default (80/443) when it names none, or any
 * port for `host:*`; and the path must start with the entry's path at a segment boundary. A URL
 * whose path holds an encoded `/` or `\` (`%2f`, `%5c`) never matches.
 */
export class OutboundUrlPolicy {
  private readonly entries: AllowEntry[];

  constructor(readonly allowlist: readonly string[]) {
    this.entries = allowlist.map((raw) => {
      const { url: u, anyPort } = parseEntry(raw);
      const path = u.pathname.endsWith('/') ? u.pathname : `${u.pathname}/`;
      return { protocol: u.protocol, hostname: u.hostname.toLowerCase(), port: anyPort ? null : portOf(u), path };
    });
  }

  /** Problems with an allow-list entry (for config validation); null when it is usable. */
  static entryProblem(raw: string): string | null {
    let u: URL;
    try {
      u = parseEntry(raw).url;
    } catch {
      return `"${raw}" is not a URL`;
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return `"${raw}" is not an http(s) URL`;
    if (u.username || u.password) return `"${raw}" must not contain credentials`;
    if (u.search || u.hash) return `"${raw}" must not contain a query or fragment`;
    if (ENCODED_SEPARATOR_RE.test(u.pathname)) return `"${raw}" must not contain an encoded / or \\ (%2f, %5c)`;
    return null;
  }

  /** Whether nothing may be called (an empty list). */
  get closed(): boolean {
    return this.entries.length === 0;
  }

  /** Whether `url` may be called. */
  allows(url: string | URL): boolean {
    let u: URL;
    try {
      u = typeof url === 'string' ? new URL(url) : url;
    } catch {
      return false;
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return false;
    if (u.username || u.password) return false;
    if (ENCODED_SEPARATOR_RE.test(u.pathname)) return false;
    const host = u.hostname.toLowerCase();
    const port = portOf(u);
    const path = u.pathname.endsWith('/') ? u.pathname : `${u.pathname}/`;
    return this.entries.some(
      (e) => e.protocol === u.protocol && e.hostname === host && (e.port === null || e.port === port) && path.startsWith(e.path),
    );
  }

  /** Throws `not_allowed` unless `url` may be called. */
  assertAllowed(url: string | URL): void {
    if (!this.allows(url)) throw new OutboundError('not_allowed', `the URL is not in OUTBOUND_URL_ALLOWLIST`);
  }
}

export interface OutboundRequest {
  url: string;
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  headers?: Record<string, string>;
  body?: string;
  /** The call is aborted after this long (the caller passes min(tool timeout, run time left)). */
  timeoutMs: number;
  /** Aborts the call from outside (a cancelled run, a shutdown). */
  signal?: AbortSignal;
  /** Response bodies larger than this are an error (`too_large`); default 1 MiB. */
  maxBodyBytes?: number;
}

export interface OutboundResponse {
  status: number;
  headers: Headers;
  body: Buffer;
  durationMs: number;
}

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/**
 * Connections kept open between calls, per scheme. An idle connection is closed after 4 s, before
 * a Node server's default 5 s keep-alive timeout (and sooner when the server's `Keep-Alive:
 * timeout=` hint says so), so a call rarely meets a connection the server is closing.
 */
const AGENTS = {
  'http:': new http.Agent({ keepAlive: true, timeout: 4_000 }),
  'https:': new https.Agent({ keepAlive: true, timeout: 4_000 }),
};

/** Calls allowed URLs with a deadline and a body cap; never follows redirects. */
export class OutboundHttpClient {
  constructor(readonly policy: OutboundUrlPolicy) {}

  /**
   * One call, the whole answer read into memory (capped). Made with `node:http` rather than
   * `fetch`: a webhook delivery or an http tool call needs no web streams, and undici's fetch
   * cost ~0.2 ms of CPU per call more (bench B6: a third of the worker's CPU per delivery).
   */
  request(req: OutboundRequest): Promise<OutboundResponse> {
    let url: URL;
    try {
      this.policy.assertAllowed(req.url);
      url = new URL(req.url);
    } catch (err) {
      return Promise.reject(err instanceof OutboundError ? err : new OutboundError('not_allowed', 'the URL is not in OUTBOUND_URL_ALLOWLIST'));
    }
    const started = performance.now();
    const max = req.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    return new Promise<OutboundResponse>((resolve, reject) => {
      let timedOut = false;
      let settled = false;
      let call: http.ClientRequest | null = null;
      const onAbort = () => call?.destroy(new Error('aborted'));
      const timer = setTimeout(
        () => {
          timedOut = true;
          call?.destroy(new OutboundError('timeout', `no answer within ${req.timeoutMs} ms`));
        },
        Math.max(0, req.timeoutMs),
      );
      const finish = (err: OutboundError | null, res?: OutboundResponse) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        req.signal?.removeEventListener('abort', onAbort);
        if (err) reject(err);
        else resolve(res!);
      };
      const fail = (err: unknown) => finish(failure(err, timedOut, req.signal));
      if (req.signal?.aborted) return fail(new Error('aborted'));
      req.signal?.addEventListener('abort', onAbort, { once: true });
      const headers: Record<string, string> = { ...req.headers };
      if (req.body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-length')) {
        headers['content-length'] = String(Buffer.byteLength(req.body));
      }
      try {
        call = (url.protocol === 'https:' ? https : http).request(url, { method: req.method ?? 'POST', headers, agent: AGENTS[url.protocol as 'http:' | 'https:'] }, (res) => {
          const declared = Number(res.headers['content-length']);
          if (Number.isFinite(declared) && declared > max) {
            call?.destroy();
            return finish(new OutboundError('too_large', `the response body is larger than ${max} bytes`));
          }
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.byteLength;
            if (size > max) {
              call?.destroy();
              return finish(new OutboundError('too_large', `the response body is larger than ${max} bytes`));
            }
            chunks.push(chunk);
          });
          res.on('end', () =>
            finish(null, { status: res.statusCode ?? 0, headers: toHeaders(res.headers), body: Buffer.concat(chunks, size), durationMs: performance.now() - started }),
          );
          res.on('error', fail);
          res.on('close', () => {
            if (!res.complete) fail(new Error('the answer was cut off'));
          });
        });
      } catch (err) {
        // An invalid header name or value (as fetch, which throws a TypeError).
        return fail(err);
      }
      call.on('error', fail);
      // A Buffer, never a string: Node writes the headers and a string body in one write with the
      // body's encoding (UTF-8), which would re-encode header octets 0x80-0xFF (a non-ASCII secret
      // goes out as its UTF-8 bytes, see HeaderSecrets); with a Buffer the headers go as octets.
      call.end(req.body === undefined ? undefined : Buffer.from(req.body, 'utf8'));
    });
  }

  /**
   * A `fetch` for libraries that make their own requests (the MCP client's transport): the same
   * allow-list and no redirects, and every answer capped as `request`'s are: a JSON (or any
   * non-SSE) body at `maxMessageBytes` in all, an SSE stream at `maxMessageBytes` per event. The
   * body is passed through as it streams (memory stays bounded); past the cap it errors with
   * `too_large` and `onTooLarge` is told (a library may only log stream errors, so the caller
   * can end what waits on it). Deadlines stay with the library's caller.
   */
  fetch(opts: { maxMessageBytes?: number; onTooLarge?: (err: OutboundError) => void } = {}): typeof fetch {
    const max = opts.maxMessageBytes ?? DEFAULT_MAX_BODY_BYTES;
    return (async (input: string | URL | Request, init?: RequestInit) => {
      const url = typeof input === 'string' || input instanceof URL ? input.toString() : input.url;
      this.policy.assertAllowed(url);
      const res = await fetch(input, { ...init, redirect: 'manual' });
      if (!res.body || NULL_BODY_STATUSES.has(res.status)) return res;
      const sse = (res.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase() === 'text/event-stream';
      const declared = Number(res.headers.get('content-length'));
      if (!sse && Number.isFinite(declared) && declared > max) {
        await res.body.cancel().catch(() => undefined);
        const err = tooLarge(max);
        opts.onTooLarge?.(err);
        throw err;
      }
      const body = res.body.pipeThrough(cappedStream(max, sse, (err) => opts.onTooLarge?.(err)));
      return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
    }) as typeof fetch;
  }
}

/** Statuses whose Response may not carry a body. */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

const tooLarge = (max: number) => new OutboundError('too_large', `the answer is larger than ${max} bytes`);

/**
 * Passes bytes through, erroring past `max`: counted over the whole body, or for an SSE stream
 * per event (the bytes since the last blank line; CRs are ignored, so CRLF framing counts too).
 */
function cappedStream(max: number, sse: boolean, onTooLarge: (err: OutboundError) => void): TransformStream<Uint8Array, Uint8Array> {
  let size = 0;
  let lastWasLf = false;
  const fail = (ctl: TransformStreamDefaultController<Uint8Array>) => {
    const err = tooLarge(max);
    onTooLarge(err);
    ctl.error(err);
  };
  return new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, ctl) {
      if (!sse) {
        size += chunk.byteLength;
        if (size > max) return fail(ctl);
        return ctl.enqueue(chunk);
      }
      for (let i = 0; i < chunk.byteLength; i++) {
        const b = chunk[i];
        if (b === 0x0a) {
          if (lastWasLf) size = 0;
          lastWasLf = true;
        } else if (b !== 0x0d) {
          lastWasLf = false;
          if (++size > max) return fail(ctl);
        }
      }
      ctl.enqueue(chunk);
    },
  });
}

function toHeaders(raw: http.IncomingHttpHeaders): Headers {
  const h = new Headers();
  for (const [k, v] of Object.entries(raw)) {
    if (Array.isArray(v)) for (const x of v) h.append(k, x);
    else if (v !== undefined) h.append(k, v);
  }
  return h;
}

function failure(err: unknown, timedOut: boolean, outer?: AbortSignal): OutboundError {
  if (err instanceof OutboundError) return err;
  if (timedOut) return new OutboundError('timeout', 'the call timed out');
  if (outer?.aborted) return new OutboundError('aborted', 'the call was aborted');
  return new OutboundError('network', 'the server could not be reached');
}

