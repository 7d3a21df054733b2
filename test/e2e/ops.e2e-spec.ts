import { connect } from 'node:net';
import { DataSource } from 'typeorm';
import { createSession, isTerminal, script, startRun, userInput, waitForRun } from '../helpers/runs';
import { openSse } from '../helpers/sse-client';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Parses the Prometheus text format into `name{labels}` -> value. */
function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

describe('protection: per-key rate limit', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ RATE_LIMIT_PER_MINUTE: '5', RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '5' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers 429 rate_limited with Retry-After once a key used its minute, per key, and never stores it for idempotency', async () => {
    const key = KEYS.memberA1;
    const sid = await createSession(t, key); // 1
    for (let i = 0; i < 4; i++) await expect(t.call(key, 'GET', `/v1/sessions/${sid}`)).resolves.toMatchObject({ status: 200 }); // 2..5
    const limited = await startRun(t, key, sid, { input: userInput('hello') }, 'idem-limited-1');
    expect(limited.status).toBe(429);
    expect(limited.body.error).toMatchObject({ code: 'rate_limited', type: 'rate_limit', retryable: true, run_id: null });
    expect(limited.body.error.request_id).toBe(limited.headers.get('x-request-id'));
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(limited.body.error.details.retry_after_s).toBe(retryAfter);
    // The rejection came before the handler: no idempotency record, no run.
    const ds = t.app.get(DataSource);
    await expect(ds.query(`SELECT count(*)::int AS n FROM idempotency_records WHERE idem_key = $1`, ['idem-limited-1'])).resolves.toEqual([{ n: 0 }]);
    await expect(ds.query(`SELECT count(*)::int AS n FROM runs WHERE session_id = $1`, [sid])).resolves.toEqual([{ n: 0 }]);
    // Another key has its own budget; operational routes are never limited.
    await expect(t.call(KEYS.memberA2, 'GET', '/v1/sessions')).resolves.toMatchObject({ status: 200 });
    for (let i = 0; i < 8; i++) {
      await expect(t.call(null, 'GET', '/healthz')).resolves.toMatchObject({ status: 200 });
      await expect(fetch(`${t.url}/metrics`).then((r) => r.status)).resolves.toBe(200);
    }
  });

  it('limits unauthenticated callers by IP', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await t.call(null, 'GET', '/v1/sessions')).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
    // A caller with a key has its own bucket, not the IP's.
    await expect(t.call(KEYS.adminA, 'GET', '/v1/sessions')).resolves.toMatchObject({ status: 200 });
  });
});

describe('protection: server timeouts', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      HTTP_CONNECTION_TIMEOUT_MS: '1000',
      HTTP_HEADERS_TIMEOUT_MS: '800',
      HTTP_REQUEST_TIMEOUT_MS: '1000',
      SSE_KEEPALIVE_MS: '200',
    });
  });
  afterAll(async () => {
    await t.close();
  });

  it('closes a connection that sends half a request and then nothing', async () => {
    const { port } = new URL(t.url);
    const started = Date.now();
    const closedAfter = await new Promise<number>((resolve, reject) => {
      const s = connect(Number(port), '127.0.0.1', () => s.write('GET /v1/sessions HTTP/1.1\r\nHost: x\r\n'));
      s.on('data', () => undefined);
      s.on('close', () => resolve(Date.now() - started));
      s.on('error', () => undefined);
      setTimeout(() => {
        s.destroy();
        reject(new Error('the server kept a silent half-request open for 8 s'));
      }, 8000).unref();
    });
    expect(closedAfter).toBeGreaterThanOrEqual(500);
    expect(closedAfter).toBeLessThan(6000);
  });

  it('keeps an SSE stream open well past the connection timeout while keep-alives flow, and it still delivers', async () => {
    const key = KEYS.memberA1;
    const sid = await createSession(t, key);
    const sse = await openSse(`${t.url}/v1/sessions/${sid}/events`, { headers: { authorization: `Bearer ${key}` } });
    expect(sse.status).toBe(200);
    let ended = false;
    void sse.ended.then(() => (ended = true));
    await sleep(3500); // 3.5x HTTP_CONNECTION_TIMEOUT_MS
    expect(ended).toBe(false);
    expect(sse.comments.filter((c) => c === 'keep-alive').length).toBeGreaterThanOrEqual(8);
    const r = await startRun(t, key, sid, { input: userInput('hi') });
    expect(r.status).toBe(202);
    const events = await sse.collect('run.finished', 10000);
    expect(events[0].event).toBe('run.started');
    expect(events[events.length - 1].event).toBe('run.finished');
    sse.close();
  });
});

describe('operability: /metrics', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ NODE_ID: 'metrics-node' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('serves Prometheus text without an API key: latency, runs, events, SSE streams, delivery lag, leases', async () => {
    const key = KEYS.memberA1;
    const sid = await createSession(t, key);
    const r = await startRun(t, key, sid, { input: userInput(script([{ text: 'abcdefgh', chunk_size: 2, delay_ms: 150 }])) });
    const sse = await openSse(`${t.url}/v1/runs/${r.body.run_id}/events`, { headers: { authorization: `Bearer ${key}` } });
    expect(sse.status).toBe(200);
    await sse.next(10000);
    const during = await fetch(`${t.url}/metrics`);
    expect(during.status).toBe(200);
    expect(during.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const m1 = parseMetrics(await during.text());
    expect(m1.get('agent_api_sse_streams_open')).toBe(1);
    expect(m1.get('agent_api_runs{status="running"}')).toBe(1);
    expect(m1.get('agent_api_worker_leases_held')).toBe(1);
    await sse.collect('run.finished', 15000);
    await waitForRun(t, key, r.body.run_id, isTerminal);
    await sse.ended;
    const m2 = parseMetrics(await (await fetch(`${t.url}/metrics`)).text());
    expect(m2.get('agent_api_sse_streams_open')).toBe(0);
    expect(m2.get('agent_api_runs{status="running"}')).toBe(0);
    expect(m2.get('agent_api_worker_leases_held')).toBe(0);
    expect(m2.get('agent_api_events_appended_total{type="run.finished"}')).toBe(1);
    expect(m2.get('agent_api_events_appended_total{type="message.delta"}')).toBeGreaterThanOrEqual(1);
    expect(m2.get('agent_api_event_delivery_lag_seconds_count')).toBeGreaterThanOrEqual(5);
    expect(m2.get('agent_api_http_request_duration_seconds_count{method="POST",route="/v1/sessions/:id/runs",status="202"}')).toBe(1);
    expect(m2.get('agent_api_http_request_duration_seconds_count{method="POST",route="/v1/sessions",status="201"}')).toBe(1);
    // The SSE request itself is not a latency sample.
    expect([...m2.keys()].some((k) => k.includes('route="/v1/runs/:id/events"'))).toBe(false);
  });
});
