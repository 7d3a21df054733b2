import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { SharedRedis } from '../../src/common/redis/shared-redis';
import { SseStreamsService } from '../../src/modules/events/api/sse-streams.service';
import { createSession } from '../helpers/runs';
import { requireRedis } from '../helpers/requirements';
import { openSse, SseStream } from '../helpers/sse-client';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/** The Redis every machine of this project runs (.ci/run starts it when it is down): without it the suite fails at once, saying what to start. */
const REDIS_URL = requireRedis();
const auth = (key: string) => ({ authorization: `Bearer ${key}` });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Two nodes of one deployment: each its own process state (and here its own database), one Redis. */
async function startNodes(prefix: string, env: Record<string, string>, ...names: string[]): Promise<TestApp[]> {
  const apps: TestApp[] = [];
  for (const name of names) apps.push(await startTestApp({ REDIS_URL, REDIS_KEY_PREFIX: prefix, NODE_ID: name, ...env }));
  return apps;
}

async function statusesOf(t: TestApp, key: string | null, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await t.call(key, 'GET', '/v1/sessions')).status);
  return out;
}

/** Opens SSE streams until one is admitted, for up to `ms` (a slot freed elsewhere shows up in Redis). */
async function openWhenFree(url: string, key: string, ms: number): Promise<{ stream: SseStream; waitedMs: number }> {
  const started = Date.now();
  for (;;) {
    const s = await openSse(url, { headers: auth(key) });
    if (s.status === 200) return { stream: s, waitedMs: Date.now() - started };
    if (Date.now() - started > ms) throw new Error(`no stream slot within ${ms} ms (last ${s.status})`);
    await sleep(50);
  }
}

describe('shared limits: two nodes with one REDIS_URL', () => {
  const prefix = `agent-api-test-${randomBytes(6).toString('hex')}:`;
  let a: TestApp;
  let b: TestApp;
  let redis: Redis;
  beforeAll(async () => {
    redis = new Redis(REDIS_URL);
    [a, b] = await startNodes(prefix, { RATE_LIMIT_PER_MINUTE: '20', RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '4', SSE_MAX_PER_KEY: '3', REDIS_NODE_TTL_MS: '4000' }, 'node-a', 'node-b');
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    await redis.quit();
  });

  it('is connected to Redis on both nodes', () => {
    expect(a.app.get(SharedRedis).connected).toBe(true);
    expect(b.app.get(SharedRedis).connected).toBe(true);
  });

  it('one rate-limit budget per key for the cluster: 10 requests on each node spend 20, the next is 429 on both', async () => {
    const spent = [...(await statusesOf(a, KEYS.memberA1, 10)), ...(await statusesOf(b, KEYS.memberA1, 10))];
    expect(spent).toEqual(Array(20).fill(200));
    const [onA, onB] = [await a.call(KEYS.memberA1, 'GET', '/v1/sessions'), await b.call(KEYS.memberA1, 'GET', '/v1/sessions')];
    expect([onA.status, onB.status]).toEqual([429, 429]);
    expect(onB.body.error).toMatchObject({ code: 'rate_limited', retryable: true });
    // Another key has its own budget, on both nodes.
    expect([(await a.call(KEYS.memberA2, 'GET', '/v1/sessions')).status, (await b.call(KEYS.memberA2, 'GET', '/v1/sessions')).status]).toEqual([200, 200]);
    // Nothing of the raw key is in Redis.
    const keys = await redis.keys(`${prefix}*`);
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.join(' ')).not.toContain(KEYS.memberA1);
  });

  it("callers without a valid key share their IP's budget across nodes too", async () => {
    const statuses = [...(await statusesOf(a, null, 2)), ...(await statusesOf(b, 'nope-not-a-key-1', 2)), ...(await statusesOf(a, 'nope-not-a-key-2', 1)), ...(await statusesOf(b, null, 1))];
    expect(statuses).toEqual([401, 401, 401, 401, 429, 429]);
  });

  it('SSE_MAX_PER_KEY holds for the cluster: 2 streams on one node and 1 on the other fill it; a slot freed on one node serves the other', async () => {
    const key = KEYS.adminB; // well within its rate budget (20)
    const sa = await createSession(a, key);
    const sb = await createSession(b, key);
    const urlA = `${a.url}/v1/sessions/${sa}/events`;
    const urlB = `${b.url}/v1/sessions/${sb}/events`;
    const s1 = await openSse(urlA, { headers: auth(key) });
    const s2 = await openSse(urlA, { headers: auth(key) });
    const s3 = await openSse(urlB, { headers: auth(key) });
    expect([s1.status, s2.status, s3.status]).toEqual([200, 200, 200]);
    const overB = await openSse(urlB, { headers: auth(key) });
    expect(overB.status).toBe(429);
    expect(overB.errorBody.error.code).toBe('rate_limited');
    s1.close();
    const { stream: s4 } = await openWhenFree(urlB, key, 3000);
    s2.close();
    s3.close();
    s4.close();
  });
});

describe('shared limits: a crashed node stops counting after REDIS_NODE_TTL_MS', () => {
  const prefix = `agent-api-test-${randomBytes(6).toString('hex')}:`;
  let a: TestApp;
  let crashing: TestApp;
  let redis: Redis;
  beforeAll(async () => {
    redis = new Redis(REDIS_URL);
    [a, crashing] = await startNodes(prefix, { SSE_MAX_PER_KEY: '2', REDIS_NODE_TTL_MS: '4000' }, 'node-a', 'node-crash');
  });
  afterAll(async () => {
    await a?.close();
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    await redis.quit();
  });

  it("the streams of a node that died without a word are freed once its heartbeat lapses, and not before", async () => {
    const key = KEYS.memberB;
    const sc = await createSession(crashing, key);
    const sa = await createSession(a, key);
    const c1 = await openSse(`${crashing.url}/v1/sessions/${sc}/events`, { headers: auth(key) });
    const c2 = await openSse(`${crashing.url}/v1/sessions/${sc}/events`, { headers: auth(key) });
    expect([c1.status, c2.status]).toEqual([200, 200]);
    const urlA = `${a.url}/v1/sessions/${sa}/events`;
    expect((await openSse(urlA, { headers: auth(key) })).status).toBe(429);
    // The crash: the node's link to Redis is cut first, so neither its releases nor its leave arrive.
    crashing.app.get(SharedRedis).client!.disconnect();
    const crashedAt = Date.now();
    expect((await openSse(urlA, { headers: auth(key) })).status).toBe(429); // still counted: its lease runs
    await crashing.close();
    expect(crashing.app.get(SseStreamsService).count).toBe(0);
    // Its last heartbeat was at most a third of the TTL (4 s) before the crash: freed 2.6..4 s after it.
    const { stream } = await openWhenFree(urlA, key, 15_000);
    expect(Date.now() - crashedAt).toBeGreaterThanOrEqual(2_000);
    stream.close();
  });
});

describe('shared limits: Redis unreachable', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ REDIS_URL: 'redis://127.0.0.1:1', RATE_LIMIT_PER_MINUTE: '3', SSE_MAX_PER_KEY: '1' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('the API keeps serving, with the limits counted on this node', async () => {
    expect(t.app.get(SharedRedis).connected).toBe(false);
    expect(await statusesOf(t, KEYS.memberA1, 4)).toEqual([200, 200, 200, 429]);
    const sid = await createSession(t, KEYS.adminA);
    const url = `${t.url}/v1/sessions/${sid}/events`;
    const s1 = await openSse(url, { headers: auth(KEYS.adminA) });
    const s2 = await openSse(url, { headers: auth(KEYS.adminA) });
    expect([s1.status, s2.status]).toEqual([200, 429]);
    s1.close();
  });
});

describe('without REDIS_URL the limits are per node', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    a = await startTestApp({ RATE_LIMIT_PER_MINUTE: '2' });
    b = await startTestApp({ RATE_LIMIT_PER_MINUTE: '2' });
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
  });

  it('each node has the whole budget', async () => {
    expect(a.app.get(SharedRedis).client).toBeNull();
    expect([...(await statusesOf(a, KEYS.memberA1, 3)), ...(await statusesOf(b, KEYS.memberA1, 3))]).toEqual([200, 200, 429, 200, 200, 429]);
  });
});
