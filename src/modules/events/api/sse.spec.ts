import { PassThrough } from 'node:stream';
import type { ServerResponse } from 'node:http';
import { encodeSseFrame, SseConnection } from './sse';

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
    expect(raw.headers).toMatchObject({ 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no', 'x-request-id': 'req_1' });
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
