import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { encodeSseFrame, parseAccept, qualityOf, SseConnection, wantsEventStream } from './sse';

describe('encodeSseFrame', () => {
  it.each([
    [{ retry: 3000 }, 'retry: 3000\n\n'],
    [{ comment: 'keep-alive' }, ': keep-alive\n\n'],
    [{ id: 7, event: 'message.delta', data: '{"a":1}' }, 'id: 7\nevent: message.delta\ndata: {"a":1}\n\n'],
    [{ data: 'line1\nline2\r\nline3' }, 'data: line1\ndata: line2\ndata: line3\n\n'],
    [{ data: '' }, 'data: \n\n'],
    [{ comment: 'a\nb' }, ': a\n: b\n\n'],
  ])('%j', (frame, expected) => {
    expect(encodeSseFrame(frame)).toBe(expected);
  });

  it.each([[{ id: 'a\nb' }], [{ event: 'x\ry' }], [{ retry: -1 }], [{ retry: 1.5 }], [{}], [{ id: 'a\0b' }]])('rejects %j', (frame) => {
    expect(() => encodeSseFrame(frame)).toThrow();
  });

  it('round-trips JSON with newlines in strings (JSON escapes them)', () => {
    const data = JSON.stringify({ text: 'a\nb' });
    expect(encodeSseFrame({ data })).toBe(`data: ${data}\n\n`);
  });
});

/** A fake raw response on a PassThrough with a small high-water mark, nobody reading it. */
function fakeRaw(highWaterMark = 16) {
  const stream = new PassThrough({ highWaterMark });
  const raw = Object.assign(stream, {
    headers: {} as Record<string, string>,
    writeHead(_status: number, headers: Record<string, string>) {
      raw.headers = headers;
      return raw;
    },
    flushHeaders() {},
  });
  return raw;
}

describe('SseConnection', () => {
  it('closes a client that does not read once its buffer passes the bound', () => {
    const raw = fakeRaw();
    const conn = new SseConnection(raw as unknown as ServerResponse, { keepaliveMs: 60_000, maxBufferedBytes: 1024 });
    const reasons: string[] = [];
    conn.onClose((r) => reasons.push(r));
    conn.open({}, 3000);
    let sent = 0;
    while (conn.send({ data: 'x'.repeat(100) }) && sent < 1000) sent++;
    expect(sent).toBeLessThan(20);
    expect(conn.isClosed).toBe(true);
    expect(reasons).toEqual(['slow_client']);
    expect(raw.destroyed).toBe(true);
  });

  it('starts with the retry frame and the SSE headers, and ends cleanly', async () => {
    const raw = fakeRaw(1 << 20);
    const conn = new SseConnection(raw as unknown as ServerResponse, { keepaliveMs: 60_000, maxBufferedBytes: 1 << 20 });
    conn.open({ 'x-request-id': 'req_1' }, 3000);
    conn.send({ id: 1, event: 'run.started', data: '{}' });
    conn.end();
    expect(conn.send({ comment: 'late' })).toBe(false);
    const chunks: Buffer[] = [];
    for await (const c of raw) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('retry: 3000\n\nid: 1\nevent: run.started\ndata: {}\n\n');
    expect(raw.headers).toMatchObject({ 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no', vary: 'Accept', 'x-request-id': 'req_1' });
  });

  it('on a real HTTP response, delivers what was written when it ends in the tick it opened (a finished run replayed; Node 22+ drops corked data on end)', async () => {
    const server = createServer((_req, res) => {
      const conn = new SseConnection(res, { keepaliveMs: 60_000, maxBufferedBytes: 1 << 20 });
      conn.open({}, 3000);
      conn.send({ id: 1, event: 'run.started', data: '{}' });
      conn.send({ id: 2, event: 'run.finished', data: '{}' });
      conn.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { port } = server.address() as AddressInfo;
      const res = await fetch(`http://127.0.0.1:${port}/`);
      expect(res.headers.get('content-type')).toBe('text/event-stream');
      await expect(res.text()).resolves.toBe('retry: 3000\n\nid: 1\nevent: run.started\ndata: {}\n\nid: 2\nevent: run.finished\ndata: {}\n\n');
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('sends keep-alive comments', async () => {
    jest.useFakeTimers();
    try {
      const raw = fakeRaw(1 << 20);
      const conn = new SseConnection(raw as unknown as ServerResponse, { keepaliveMs: 100, maxBufferedBytes: 1 << 20 });
      conn.open({}, 3000);
      jest.advanceTimersByTime(250);
      conn.end();
      const chunks: Buffer[] = [];
      for await (const c of raw) chunks.push(c as Buffer);
      expect(Buffer.concat(chunks).toString()).toBe('retry: 3000\n\n: keep-alive\n\n: keep-alive\n\n');
    } finally {
      jest.useRealTimers();
    }
  });
});

describe('parseAccept', () => {
  it.each([
    ['', []],
    ['text/event-stream', [{ type: 'text', subtype: 'event-stream', q: 1 }]],
    [
      'Text/Event-Stream;q=0.5, application/json ; charset=utf-8 ; Q=0.25',
      [
        { type: 'text', subtype: 'event-stream', q: 0.5 },
        { type: 'application', subtype: 'json', q: 0.25 },
      ],
    ],
    ['*', [{ type: '*', subtype: '*', q: 1 }]],
    ['text/*;q=0, */*;q=0.1', [{ type: 'text', subtype: '*', q: 0 }, { type: '*', subtype: '*', q: 0.1 }]],
    // Only the first q counts; what follows it are accept-extensions.
    ['text/event-stream;q=0.3;q=1;ext=x', [{ type: 'text', subtype: 'event-stream', q: 0.3 }]],
    // Quoted parameter values may hold commas and semicolons.
    ['text/event-stream;x="a,b;q=0";q=0.7', [{ type: 'text', subtype: 'event-stream', q: 0.7 }]],
    ['text/event-stream;x="a\\"b,c"', [{ type: 'text', subtype: 'event-stream', q: 1 }]],
    // Malformed q: not acceptable; above 1: clamped.
    ['text/event-stream;q=high', [{ type: 'text', subtype: 'event-stream', q: 0 }]],
    ['text/event-stream;q=-1', [{ type: 'text', subtype: 'event-stream', q: 0 }]],
    ['text/event-stream;q=2', [{ type: 'text', subtype: 'event-stream', q: 1 }]],
    // Malformed ranges are skipped.
    ['text, /json, text/, */json, a/b/c, te xt/plain, ,, application/json', [{ type: 'application', subtype: 'json', q: 1 }]],
  ])('%j', (header, expected) => {
    expect(parseAccept(header)).toEqual(expected);
  });

  it('reads several headers as one list', () => {
    expect(parseAccept(['application/json;q=0.1', 'text/event-stream'])).toEqual([
      { type: 'application', subtype: 'json', q: 0.1 },
      { type: 'text', subtype: 'event-stream', q: 1 },
    ]);
  });
});

describe('qualityOf', () => {
  it.each([
    ['application/json;q=0.2, application/*;q=0.5, */*;q=0.9', 0.2],
    ['application/*;q=0.5, */*;q=0.9', 0.5],
    ['*/*;q=0.9', 0.9],
    ['text/event-stream', 0],
    ['application/json;q=0.2, application/json;q=0.4', 0.4],
    ['*/*, application/json;q=0', 0],
  ])('application/json in %j -> %d', (header, q) => {
    expect(qualityOf(parseAccept(header), 'application', 'json')).toBe(q);
  });
});

describe('wantsEventStream', () => {
  it.each([
    // The contract's two representations, and the examples of the q-value rule.
    ['text/event-stream', true],
    [undefined, false],
    ['', false],
    ['application/json', false],
    ['text/event-stream;q=0, application/json', false],
    ['application/json;q=0.5, text/event-stream', true],
    ['application/json, text/event-stream;q=0.5', false],
    // Ties go to the stream, as naming text/event-stream always did.
    ['text/event-stream, application/json', true],
    ['application/json, text/event-stream', true],
    ['application/json;q=0.5, text/event-stream;q=0.5', true],
    // Wildcards alone keep JSON; they still give JSON its quality against a named stream.
    ['*/*', false],
    ['*', false],
    ['text/*', false],
    ['text/event-stream;q=0.5, */*', false],
    ['text/event-stream, */*;q=0.8', true],
    ['text/event-stream;q=0.5, application/*;q=0.4', true],
    ['text/event-stream;q=0.5, text/html', true],
    // Case-insensitive; parameters other than q do not matter.
    ['TEXT/EVENT-STREAM', true],
    ['text/event-stream; charset=utf-8', true],
    ['text/event-stream;q=0', false],
    ['text/event-stream;q=nope', false],
    [['application/json;q=0.1', 'text/event-stream'], true],
  ])('%j -> %s', (header, expected) => {
    expect(wantsEventStream(header as string | string[] | undefined)).toBe(expected);
  });
});
