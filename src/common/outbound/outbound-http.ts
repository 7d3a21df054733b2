/**
 * The one guarded HTTP client for every call this service makes to a URL someone configured
 * (http and mcp tools, webhooks; CONTRACT section 13): only URLs inside OUTBOUND_URL_ALLOWLIST,
 * redirects never followed, a deadline per call, response bodies capped. Callers get either an
 * `OutboundResponse` or an `OutboundError` with a `kind` to branch on - never a raw fetch error.
 */

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
  /** '' = any port. */
  port: string;
  /** Path prefix ending in '/'. */
  path: string;
}

/**
 * The allow-list: each entry is a URL prefix (`http://127.0.0.1`, `https://api.example.com/tools/`).
 * Matching is by parsed parts, not by text: scheme and host must be equal (so
 * `http://127.0.0.1.evil.example` and `http://127.0.0.1@evil.example` do not match `http://127.0.0.1`),
 * the port must be equal when the entry names one, and the path must start with the entry's path
 * at a segment boundary.
 */
export class OutboundUrlPolicy {
  private readonly entries: AllowEntry[];

  constructor(readonly allowlist: readonly string[]) {
    this.entries = allowlist.map((raw) => {
      const u = new URL(raw);
      const path = u.pathname.endsWith('/') ? u.pathname : `${u.pathname}/`;
      return { protocol: u.protocol, hostname: u.hostname.toLowerCase(), port: u.port, path };
    });
  }

  /** Problems with an allow-list entry (for config validation); null when it is usable. */
  static entryProblem(raw: string): string | null {
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      return `"${raw}" is not a URL`;
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return `"${raw}" is not an http(s) URL`;
    if (u.username || u.password) return `"${raw}" must not contain credentials`;
    if (u.search || u.hash) return `"${raw}" must not contain a query or fragment`;
    return null;
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
    const host = u.hostname.toLowerCase();
    const path = u.pathname.endsWith('/') ? u.pathname : `${u.pathname}/`;
    return this.entries.some(
      (e) => e.protocol === u.protocol && e.hostname === host && (e.port === '' || e.port === u.port) && path.startsWith(e.path),
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

/** Calls allowed URLs with a deadline and a body cap; never follows redirects. */
export class OutboundHttpClient {
  constructor(readonly policy: OutboundUrlPolicy) {}

  async request(req: OutboundRequest): Promise<OutboundResponse> {
    this.policy.assertAllowed(req.url);
    const started = performance.now();
    const { signal, timedOut, dispose } = deadlineSignal(req.timeoutMs, req.signal);
    try {
      let res: Response;
      try {
        res = await fetch(req.url, {
          method: req.method ?? 'POST',
          headers: req.headers,
          body: req.body,
          redirect: 'manual',
          signal,
        });
      } catch (err) {
        throw failure(err, timedOut(), req.signal);
      }
      const body = await readCapped(res, req.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES).catch((err) => {
        throw err instanceof OutboundError ? err : failure(err, timedOut(), req.signal);
      });
      return { status: res.status, headers: res.headers, body, durationMs: performance.now() - started };
    } finally {
      dispose();
    }
  }

  /**
   * A `fetch` for libraries that make their own requests (the MCP client's transport): the same
   * allow-list and no redirects; deadlines and body handling stay with the library's caller.
   */
  fetch(): typeof fetch {
    return (async (input: string | URL | Request, init?: RequestInit) => {
      const url = typeof input === 'string' || input instanceof URL ? input.toString() : input.url;
      this.policy.assertAllowed(url);
      return fetch(input, { ...init, redirect: 'manual' });
    }) as typeof fetch;
  }
}

function deadlineSignal(timeoutMs: number, outer?: AbortSignal): { signal: AbortSignal; timedOut: () => boolean; dispose: () => void } {
  const ctl = new AbortController();
  let expired = false;
  const timer = setTimeout(() => {
    expired = true;
    ctl.abort(new OutboundError('timeout', `no answer within ${timeoutMs} ms`));
  }, Math.max(0, timeoutMs));
  const onOuter = () => ctl.abort(outer?.reason);
  if (outer) {
    if (outer.aborted) onOuter();
    else outer.addEventListener('abort', onOuter, { once: true });
  }
  return {
    signal: ctl.signal,
    timedOut: () => expired,
    dispose: () => {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuter);
    },
  };
}

function failure(err: unknown, timedOut: boolean, outer?: AbortSignal): OutboundError {
  if (err instanceof OutboundError) return err;
  if (timedOut) return new OutboundError('timeout', 'the call timed out');
  if (outer?.aborted) return new OutboundError('aborted', 'the call was aborted');
  return new OutboundError('network', 'the server could not be reached');
}

async function readCapped(res: Response, max: number): Promise<Buffer> {
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > max) {
    await res.body?.cancel().catch(() => undefined);
    throw new OutboundError('too_large', `the response body is larger than ${max} bytes`);
  }
  if (!res.body) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let size = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      throw new OutboundError('too_large', `the response body is larger than ${max} bytes`);
    }
    chunks.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
  }
  return Buffer.concat(chunks, size);
}
