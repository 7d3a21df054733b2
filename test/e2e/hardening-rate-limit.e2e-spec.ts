import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiKeysService, hashApiKey } from '../../src/common/auth/api-keys.service';
import { rawRequest, RawResponse, sendRaw } from '../helpers/raw-http';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

function expectRateLimited(res: RawResponse): void {
  expect(res.status).toBe(429);
  expect(res.body.error).toMatchObject({ code: 'rate_limited', type: 'rate_limit', retryable: true });
  expect(res.headers['x-request-id']).toBe(res.body.error.request_id);
  expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
}

/** The request targets that reach `/v1/sessions` without spelling it: absolute form, percent-encoding, both. */
const DISGUISED = ['http://x/v1/sessions', '/%76%31/sessions', 'http://x/%76%31/%73essions'];

describe('hardening: the rate limit decides by the route the router matched', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ RATE_LIMIT_PER_MINUTE: '6', RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '5' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('absolute-form and percent-encoded targets are routed normally, counted like /v1/sessions, and audited', async () => {
    const key = KEYS.adminA;
    const served: number[] = [];
    for (const target of DISGUISED) served.push((await sendRaw(t.url, rawRequest('GET', target, bearer(key)))).status);
    const created = await sendRaw(t.url, rawRequest('POST', 'http://x/v1/sessions', { ...bearer(key), 'x-request-id': 'abs-post-1' }, '{"title":"absolute"}'));
    served.push(created.status);
    expect(served).toEqual([200, 200, 200, 201]);
    // The POST was audited like any other (the audit decides by the route too).
    const trail = await t.call(key, 'GET', `/v1/admin/audit?session_id=${created.body.id}`);
    expect(trail.status).toBe(200);
    expect(trail.body.data.map((r: any) => r.request_id)).toContain('abs-post-1');
    // 5 of 6 spent: one more plain request, then 429.
    const plain: number[] = [];
    for (let i = 0; i < 2; i++) plain.push((await t.call(key, 'GET', '/v1/sessions')).status);
    expect(plain).toEqual([200, 429]);
  });

  it('with the budget spent, every disguised GET and POST is 429 and creates nothing', async () => {
    const key = KEYS.memberA1;
    for (let i = 0; i < 6; i++) expect((await t.call(key, 'GET', '/v1/sessions')).status).toBe(200);
    expect((await t.call(key, 'GET', '/v1/sessions')).status).toBe(429);
    for (const target of DISGUISED) {
      expectRateLimited(await sendRaw(t.url, rawRequest('GET', target, bearer(key))));
      expectRateLimited(await sendRaw(t.url, rawRequest('POST', target, bearer(key), '{"title":"sneaky"}')));
      expect((await sendRaw(t.url, rawRequest('HEAD', target, bearer(key)))).status).toBe(429);
    }
    const ds = t.app.get(DataSource);
    await expect(ds.query(`SELECT count(*)::int AS n FROM sessions WHERE title = 'sneaky'`)).resolves.toEqual([{ n: 0 }]);
  });

  it('a flood of random Bearer tokens gets 429 after the IP budget, costs no key lookup, and a valid key keeps working', async () => {
    const ds = t.app.get(DataSource);
    const spy = jest.spyOn(ds, 'query');
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 200; i++) {
        const res = await t.call(`flood-${randomBytes(12).toString('hex')}`, 'GET', '/v1/sessions');
        statuses.push(res.status);
        if (i === 100) {
          // A valid key (from the same IP) is untouched by the flood.
          await expect(t.call(KEYS.memberB, 'GET', '/v1/sessions')).resolves.toMatchObject({ status: 200 });
        }
      }
      expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
      expect(new Set(statuses.slice(5))).toEqual(new Set([429]));
      // No request without a key gets a fresh budget either, and a valid key still works afterwards.
      expect((await t.call(null, 'GET', '/v1/sessions')).status).toBe(429);
      expect((await t.call(KEYS.memberB, 'GET', '/v1/sessions')).status).toBe(200);
      const keyLookups = spy.mock.calls.filter(([sql]) => /api_keys\s+WHERE/i.test(String(sql)));
      expect(keyLookups).toEqual([]);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('hardening: the in-memory key table follows api_keys', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it("a key another node's start-up removed stops working when the table is re-read, and one it added starts working", async () => {
    const ds = t.app.get(DataSource);
    const newKey = 'brand-new-key-0001';
    await ds.query(`DELETE FROM api_keys WHERE key_hash = $1`, [hashApiKey(KEYS.memberA2)]);
    await ds.query(`INSERT INTO api_keys (id, key_hash, tenant_id, subject_id, role) VALUES ('key_new_0001', $1, 'tenant_a', 'user_new', 'member')`, [hashApiKey(newKey)]);
    // Until the next re-read (every API_KEYS_REFRESH_MS) this node answers from the table it has.
    expect((await t.call(KEYS.memberA2, 'GET', '/v1/sessions')).status).toBe(200);
    expect((await t.call(newKey, 'GET', '/v1/sessions')).status).toBe(401);
    await t.app.get(ApiKeysService).reload();
    expect((await t.call(KEYS.memberA2, 'GET', '/v1/sessions')).status).toBe(401);
    const created = await t.call(newKey, 'POST', '/v1/sessions', {});
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ tenant_id: 'tenant_a', subject_id: 'user_new' });
    // The node's own API_KEYS are authoritative again at its next start-up sync.
    await t.app.get(ApiKeysService).sync();
    expect((await t.call(KEYS.memberA2, 'GET', '/v1/sessions')).status).toBe(200);
    expect((await t.call(newKey, 'GET', '/v1/sessions')).status).toBe(401);
  });
});
