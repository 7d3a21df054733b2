import { parseRawResponse, rawRequest, RawResponse, sendRaw } from '../helpers/raw-http';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

const auth = { authorization: `Bearer ${KEYS.adminA}` };

/** The contract envelope (CONTRACT section 2) with its X-Request-Id header, and nothing internal in it. */
function expectEnvelope(res: RawResponse, status: number, code: string, retryable: boolean, requestId?: string): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.body).toEqual({
    error: {
      code,
      message: expect.any(String),
      type: 'invalid_request',
      retryable,
      request_id: expect.stringMatching(/^[A-Za-z0-9._-]{1,128}$/),
      run_id: null,
      details: expect.any(Object),
    },
  });
  expect(res.headers['x-request-id']).toBe(res.body.error.request_id);
  if (requestId) expect(res.body.error.request_id).toBe(requestId);
  else expect(res.body.error.request_id).toMatch(/^req_/);
  expect(res.text).not.toMatch(/FST_|HPE_|ERR_HTTP|statusCode|at .*\.(js|ts)|\/v1\//);
  // One response, nothing after it.
  expect(res.raw.split('HTTP/1.1 ').length).toBe(2);
}

describe('hardening: every error of the HTTP layer is the contract envelope with X-Request-Id', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ HTTP_HEADERS_TIMEOUT_MS: '800', HTTP_REQUEST_TIMEOUT_MS: '1500', HTTP_CONNECTION_TIMEOUT_MS: '5000', SSE_KEEPALIVE_MS: '1000' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('a malformed percent-encoding in the path is 400 invalid_request, the inbound X-Request-Id echoed, the URL not', async () => {
    const res = await sendRaw(t.url, rawRequest('GET', '/v1/sessions/%ZZsecret', { ...auth, 'x-request-id': 'bad-url-1' }));
    expectEnvelope(res, 400, 'invalid_request', false, 'bad-url-1');
    expect(res.body.error.details.errors).toEqual([{ field: 'path', message: 'malformed percent-encoding' }]);
    expect(res.text).not.toContain('secret');
    // Without a key and without an id of its own too.
    expectEnvelope(await sendRaw(t.url, rawRequest('POST', '/v1/sessions/%E0%A4%A/archive')), 400, 'invalid_request', false);
  });

  it('a path parameter over the router limit is 414 uri_too_long and the URL is not echoed', async () => {
    const long = 'sess_' + 'a'.repeat(150);
    const res = await sendRaw(t.url, rawRequest('GET', `/v1/sessions/${long}`, { ...auth, 'x-request-id': 'long-param-1' }));
    expectEnvelope(res, 414, 'uri_too_long', false, 'long-param-1');
    expect(res.text).not.toContain('aaaaaaaaaa');
  });

  it('a header over 16 KiB is 431 headers_too_large', async () => {
    const res = await sendRaw(t.url, rawRequest('GET', '/v1/sessions', { ...auth, 'x-padding': 'p'.repeat(17 * 1024) }));
    expectEnvelope(res, 431, 'headers_too_large', false);
    expect(res.text).not.toContain('pppp');
  });

  it.each([
    ['a request line that is not HTTP', 'GARBAGE\r\n\r\n'],
    ['an unknown HTTP version', 'GET /v1/sessions HTTP/9.9\r\nhost: x\r\n\r\n'],
    ['a header without a colon', 'GET /v1/sessions HTTP/1.1\r\nhost: x\r\nthis is not a header\r\n\r\n'],
    ['both Content-Length and Transfer-Encoding', 'POST /v1/sessions HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\ntransfer-encoding: chunked\r\n\r\n{}'],
  ])('%s is 400 invalid_request', async (_, request) => {
    expectEnvelope(await sendRaw(t.url, request), 400, 'invalid_request', false);
  });

  it('a malformed chunk in a request body is one 400 invalid_request with the request id of that request', async () => {
    const request =
      `POST /v1/sessions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${KEYS.adminA}\r\ncontent-type: application/json\r\n` +
      `x-request-id: bad-chunk-1\r\ntransfer-encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n`;
    const res = await sendRaw(t.url, request);
    expectEnvelope(res, 400, 'invalid_request', false, 'bad-chunk-1');
    // Nothing was created by the half-parsed request.
    const list = await t.call(KEYS.adminA, 'GET', '/v1/sessions');
    expect(list.body.data).toEqual([]);
  });

  it('headers that do not arrive within the headers timeout: 408 request_timeout (retryable)', async () => {
    const started = Date.now();
    const res = await sendRaw(t.url, 'GET /v1/sessions HTTP/1.1\r\nhost: x\r\n', { trickle: ['x-a: 1\r\n', 'x-b: 2\r\n', 'x-c: 3\r\n'], gapMs: 200 });
    expectEnvelope(res, 408, 'request_timeout', true);
    expect(Date.now() - started).toBeLessThan(4000);
  });

  it('a body that does not arrive within the request timeout: 408 request_timeout with that request id', async () => {
    const head = rawRequest('POST', '/v1/sessions', { ...auth, 'x-request-id': 'slow-body-1', 'content-type': 'application/json', 'content-length': '200' });
    const started = Date.now();
    // A byte every 300 ms keeps the connection busy (no idle timeout); the request is never complete.
    const res = await sendRaw(t.url, head + '{', { trickle: Array.from({ length: 20 }, () => ' '), gapMs: 300 });
    expectEnvelope(res, 408, 'request_timeout', true, 'slow-body-1');
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('the server still answers normally afterwards', async () => {
    await expect(t.call(null, 'GET', '/healthz')).resolves.toMatchObject({ status: 200 });
    const ok = await sendRaw(t.url, rawRequest('GET', '/v1/sessions', auth));
    expect(ok.status).toBe(200);
  });
});

describe('hardening: a request that reaches a closing node', () => {
  it('is 503 unavailable (retryable, Retry-After) in the envelope, not a bare framework body', async () => {
    const t = await startTestApp();
    const { connect } = await import('node:net');
    const { port } = new URL(t.url);
    const socket = connect(Number(port), '127.0.0.1');
    let data = '';
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => (data += c));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    await new Promise<void>((resolve) => socket.on('connect', () => resolve()));
    // A request in flight keeps the connection open while the app closes.
    socket.write(`POST /v1/sessions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${KEYS.adminA}\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n`);
    await new Promise((r) => setTimeout(r, 100));
    const closing = t.close();
    const deadline = Date.now() + 10_000;
    while (t.app.getHttpServer().listening) {
      if (Date.now() > deadline) throw new Error('the server kept listening');
      await new Promise((r) => setTimeout(r, 10));
    }
    // The first request completes; the next one on the same connection meets the closing node.
    socket.write(`{}GET /v1/sessions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${KEYS.adminA}\r\nx-request-id: while-closing-1\r\n\r\n`);
    await closed;
    await closing;
    const second = data.indexOf('HTTP/1.1 ', 1);
    expect(second).toBeGreaterThan(0);
    const res = parseRawResponse(data.slice(second));
    expect(res.status).toBe(503);
    expect(res.body.error).toMatchObject({ code: 'unavailable', type: 'server_error', retryable: true, request_id: 'while-closing-1' });
    expect(res.headers['x-request-id']).toBe('while-closing-1');
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });
});
