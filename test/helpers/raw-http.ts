import { connect, Socket } from 'node:net';

/** A response read off a raw socket: what an attacker's own client would see. */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  text: string;
  body: any;
  /** Every byte received, for checks that no second response followed the first. */
  raw: string;
}

/** The first HTTP response in `raw` (headers and a Content-Length body). */
export function parseRawResponse(raw: string): RawResponse {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`no complete response in ${JSON.stringify(raw.slice(0, 200))}`);
  const [statusLine, ...lines] = raw.slice(0, end).split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
  if (!m) throw new Error(`not an HTTP response: ${JSON.stringify(statusLine)}`);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  const length = headers['content-length'] !== undefined ? Number(headers['content-length']) : raw.length - end - 4;
  const text = raw.slice(end + 4, end + 4 + length);
  let body: any;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: Number(m[1]), headers, text, body, raw };
}

export interface RawSendOptions {
  /** Bytes written after the first chunk, each after `gapMs` (slow clients). */
  trickle?: string[];
  gapMs?: number;
  /** Give up (and fail) after this long without the server closing the connection. */
  timeoutMs?: number;
}

/**
 * Writes `request` exactly as given (request line, headers, body) on a fresh TCP connection and
 * returns everything the server sent until it closed the connection (send `Connection: close`
 * for normal requests).
 */
export function sendRaw(baseUrl: string, request: string, opts: RawSendOptions = {}): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    let data = '';
    let socket: Socket;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server did not close the connection within ${opts.timeoutMs ?? 10_000} ms; got ${JSON.stringify(data.slice(0, 300))}`));
    }, opts.timeoutMs ?? 10_000);
    const timers: NodeJS.Timeout[] = [timer];
    socket = connect(Number(port), hostname, () => {
      socket.write(request);
      (opts.trickle ?? []).forEach((chunk, i) => {
        timers.push(setTimeout(() => socket.writable && socket.write(chunk), (i + 1) * (opts.gapMs ?? 100)));
      });
    });
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (data += chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      timers.forEach(clearTimeout);
      try {
        resolve(parseRawResponse(data));
      } catch (err) {
        reject(err);
      }
    });
  });
}

/** A complete request with `Connection: close`, a Host header and, when given, a JSON body. */
export function rawRequest(method: string, target: string, headers: Record<string, string> = {}, body?: string): string {
  const h: Record<string, string> = { host: 'x', connection: 'close', ...headers };
  if (body !== undefined) {
    h['content-type'] ??= 'application/json';
    h['content-length'] = String(Buffer.byteLength(body));
  }
  return `${method} ${target} HTTP/1.1\r\n${Object.entries(h)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n${body ?? ''}`;
}
