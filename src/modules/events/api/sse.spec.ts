import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { getLines, getMessages, type EventSourceMessage } from '@microsoft/fetch-event-source/lib/cjs/parse';
import { createParser } from 'eventsource-parser';
import { encodeSseComment, encodeSseFrame, parseAccept, qualityOf, SseConnection, wantsEventStream } from './sse';

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

  it.each([
    ['keep-alive', ': keep-alive\n'],
    ['a\nb', ': a\n: b\n'],
  ])('comment %j is comment lines with no blank line after them', (comment, expected) => {
    expect(encodeSseComment(comment)).toBe(expected);
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

  it('sends retry with the first event (one frame) and the SSE headers, and ends cleanly', async () => {
    const raw = fakeRaw(1 << 20);
    const conn = new SseConnection(raw as unknown as ServerResponse, { keepaliveMs: 60_000, maxBufferedBytes: 1 << 20 });
    conn.open({ 'x-request-id': 'req_1' }, 3000);
    conn.write(encodeSseFrame({ id: 1, event: 'run.started', data: '{}' }));
    conn.send({ id: 2, event: 'message.delta', data: '{}' });
    conn.end();
    expect(conn.send({ comment: 'late' })).toBe(false);
    const chunks: Buffer[] = [];
    for await (const c of raw) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('retry: 3000\nid: 1\nevent: run.started\ndata: {}\n\nid: 2\nevent: message.delta\ndata: {}\n\n');
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
      await expect(res.text()).resolves.toBe('retry: 3000\nid: 1\nevent: run.started\ndata: {}\n\nid: 2\nevent: run.finished\ndata: {}\n\n');
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
      expect(Buffer.concat(chunks).toString()).toBe('retry: 3000\n: keep-alive\n: keep-alive\n');
    } finally {
      jest.useRealTimers();
    }
  });

  /** What one connection writes: open, then (optionally in the same tick) a first page, idle keep-alives, later events. */
  async function wire(firstPage: boolean): Promise<Buffer[]> {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate'] });
    try {
      const raw = fakeRaw(1 << 20);
      const conn = new SseConnection(raw as unknown as ServerResponse, { keepaliveMs: 100, maxBufferedBytes: 1 << 20 });
      conn.open({}, 3000);
      if (firstPage) conn.write(encodeSseFrame({ id: 1, event: 'run.started', data: '{"n":1}' }) + encodeSseFrame({ id: 2, event: 'message.delta', data: '{"n":2}' }));
      await new Promise((r) => process.nextTick(r));
      jest.advanceTimersByTime(250);
      conn.send({ id: 3, event: 'message.delta', data: '{"n":3}' });
      jest.advanceTimersByTime(100);
      conn.send({ id: 4, event: 'run.finished', data: '{"n":4}' });
      conn.end();
      const chunks: Buffer[] = [];
      for await (const c of raw) chunks.push(c as Buffer);
      return chunks;
    } finally {
      jest.useRealTimers();
    }
  }

  it.each([
    ['with a first page', true, 'retry: 3000\nid: 1\nevent: run.started\ndata: {"n":1}\n\nid: 2'],
    ['with nothing to send yet', false, 'retry: 3000\n: keep-alive\n'],
  ])('%s: the first write starts with retry: 3000 and is one write', async (_name, firstPage, start) => {
    const chunks = await wire(firstPage);
    expect(chunks[0].toString().startsWith(start)).toBe(true);
    // Nothing before the opening write (headers go with it on a real socket: corked).
    expect(chunks[0].toString()).toMatch(/^retry: 3000\n/);
  });

  it.each([true, false])('@microsoft/fetch-event-source gets only real messages and the retry (first page: %s)', async (firstPage) => {
    const bytes = Buffer.concat(await wire(firstPage));
    const messages: EventSourceMessage[] = [];
    const retries: number[] = [];
    const ids: string[] = [];
    const onChunk = getLines(getMessages((id) => ids.push(id), (r) => retries.push(r), (m) => messages.push({ ...m })));
    // Byte by byte: frame boundaries must not matter.
    for (const b of bytes) onChunk(new Uint8Array([b]));
    const expectedIds = firstPage ? ['1', '2', '3', '4'] : ['3', '4'];
    expect(retries).toEqual([3000]);
    expect(messages.map((m) => [m.id, m.event, JSON.parse(m.data).n])).toEqual(expectedIds.map((id) => [id, Number(id) === 1 ? 'run.started' : Number(id) === 4 ? 'run.finished' : 'message.delta', Number(id)]));
    expect(messages.every((m) => m.data !== '')).toBe(true);
  });

  it.each([true, false])('a WHATWG parser (eventsource-parser) gets the same events, the retry and the keep-alives (first page: %s)', async (firstPage) => {
    const text = Buffer.concat(await wire(firstPage)).toString();
    const events: string[] = [];
    const retries: number[] = [];
    const comments: string[] = [];
    const parser = createParser({ onEvent: (m) => events.push(`${m.id}:${m.event}`), onRetry: (r) => retries.push(r), onComment: (c) => comments.push(c.trim()) });
    parser.feed(text);
    expect(retries).toEqual([3000]);
    expect(events).toEqual(firstPage ? ['1:run.started', '2:message.delta', '3:message.delta', '4:run.finished'] : ['3:message.delta', '4:run.finished']);
    expect(comments.length).toBeGreaterThanOrEqual(2);
    expect(comments.every((c) => c === 'keep-alive')).toBe(true);
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
