import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

const ENVELOPE_KEYS = ['code', 'details', 'message', 'request_id', 'retryable', 'run_id', 'type'];

describe('foundation e2e: auth, request ids, isolation', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  describe('authentication', () => {
    it.each([
      ['no Authorization header', {}],
      ['an unknown key', { authorization: 'Bearer unknown-key-0000' }],
      ['a malformed header', { authorization: 'Basic dXNlcjpwYXNz' }],
      ['an empty bearer', { authorization: 'Bearer ' }],
    ])('%s -> 401 unauthorized envelope', async (_, headers) => {
      const res = await t.call(null, 'GET', '/v1/sessions', undefined, headers as Record<string, string>);
      expect(res.status).toBe(401);
      expect(Object.keys(res.body.error).sort()).toEqual(ENVELOPE_KEYS);
      expect(res.body.error).toMatchObject({ code: 'unauthorized', type: 'authentication', retryable: false, run_id: null });
      expect(res.body.error.request_id).toBe(res.headers.get('x-request-id'));
      expect(res.headers.get('content-type')).toMatch(/application\/json/);
    });

    it('a configured key is accepted, case-insensitive "bearer" too', async () => {
      await expect(t.call(KEYS.memberA1, 'GET', '/v1/sessions')).resolves.toMatchObject({ status: 200 });
      const res = await t.call(null, 'GET', '/v1/sessions', undefined, { authorization: `bearer ${KEYS.memberA1}` });
      expect(res.status).toBe(200);
    });

    it('keys are stored hashed, never raw', async () => {
      const { DataSource } = await import('typeorm');
      const rows: Array<{ key_hash: string }> = await t.app.get(DataSource).query(`SELECT key_hash FROM api_keys`);
      expect(rows).toHaveLength(5);
      const all = JSON.stringify(rows);
      for (const key of Object.values(KEYS)) expect(all).not.toContain(key);
      for (const r of rows) expect(r.key_hash).toMatch(/^[0-9a-f]{64}$/);
    });

    it('health and docs need no key', async () => {
      await expect(t.call(null, 'GET', '/healthz')).resolves.toMatchObject({ status: 200 });
      await expect(t.call(null, 'GET', '/readyz')).resolves.toMatchObject({ status: 200 });
      await expect(t.call(null, 'GET', '/docs-json')).resolves.toMatchObject({ status: 200 });
    });
  });

  describe('X-Request-Id', () => {
    it.each(['abc', 'A.b_c-9', 'x'.repeat(128)])('echoes a valid inbound id %s, on success and on errors', async (id) => {
      const ok = await t.call(KEYS.memberA1, 'GET', '/v1/sessions', undefined, { 'x-request-id': id });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-request-id')).toBe(id);
      const err = await t.call(null, 'GET', '/v1/sessions', undefined, { 'x-request-id': id });
      expect(err.headers.get('x-request-id')).toBe(id);
      expect(err.body.error.request_id).toBe(id);
    });

    it.each(['x'.repeat(129), 'has space', 'semi;colon', 'slash/no', 'bang!'])(
      'replaces an invalid inbound id %j with a new req_ id',
      async (id) => {
        const res = await t.call(null, 'GET', '/v1/sessions', undefined, { 'x-request-id': id });
        const got = res.headers.get('x-request-id');
        expect(got).toMatch(/^req_[0-9A-HJKMNP-TV-Z]{26}$/);
        expect(res.body.error.request_id).toBe(got);
      },
    );

    it('generates a fresh req_ id per request when none is sent', async () => {
      const a = await t.call(KEYS.memberA1, 'GET', '/v1/sessions');
      const b = await t.call(KEYS.memberA1, 'GET', '/v1/sessions');
      expect(a.headers.get('x-request-id')).toMatch(/^req_/);
      expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'));
    });

    it('unknown routes answer the 404 not_found envelope with the request id, with or without a key', async () => {
      for (const key of [null, KEYS.memberA1]) {
        const res = await t.call(key, 'GET', '/v1/no-such-thing', undefined, { 'x-request-id': 'trace-404' });
        expect(res.status).toBe(404);
        expect(res.headers.get('x-request-id')).toBe('trace-404');
        expect(res.body.error).toMatchObject({ code: 'not_found', type: 'not_found', request_id: 'trace-404', details: {} });
      }
      const generated = await t.call(null, 'DELETE', '/nowhere');
      expect(generated.status).toBe(404);
      expect(generated.headers.get('x-request-id')).toMatch(/^req_/);
      expect(generated.body.error.request_id).toBe(generated.headers.get('x-request-id'));
    });
  });

  describe('isolation matrix', () => {
    let a1: string;
    let a2: string;
    let b: string;
    const randomId = 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B';

    beforeAll(async () => {
      a1 = (await t.call(KEYS.memberA1, 'POST', '/v1/sessions', { title: 'a1' })).body.id;
      a2 = (await t.call(KEYS.memberA2, 'POST', '/v1/sessions', { title: 'a2' })).body.id;
      b = (await t.call(KEYS.memberB, 'POST', '/v1/sessions', { title: 'b' })).body.id;
      expect([a1, a2, b].every((id) => /^sess_/.test(id))).toBe(true);
    });

    /** A 404 body with the id and request id taken out, to compare "foreign" with "missing". */
    async function notFoundShape(key: string, method: string, path: string, body?: unknown) {
      const res = await t.call(key, method, path, body, { 'x-request-id': 'same-id' });
      expect(res.status).toBe(404);
      return { status: res.status, text: res.text.split(path.split('/')[3]).join('<id>') };
    }

    it.each<[string, string, unknown]>([
      ['GET', '', undefined],
      ['POST', '', { title: 'hijack' }],
      ['POST', '/archive', {}],
      ['DELETE', '', undefined],
    ])('member A1 gets 404 on %s of A2\'s session%s, identical to a random id', async (method, suffix, body) => {
      const foreign = await notFoundShape(KEYS.memberA1, method, `/v1/sessions/${a2}${suffix}`, body);
      const missing = await notFoundShape(KEYS.memberA1, method, `/v1/sessions/${randomId}${suffix}`, body);
      expect(foreign).toEqual(missing);
      expect(JSON.parse(foreign.text).error.code).toBe('session_not_found');
    });

    it('member A1 lists only its own sessions', async () => {
      const res = await t.call(KEYS.memberA1, 'GET', '/v1/sessions?limit=100');
      const ids = res.body.data.map((s: { id: string }) => s.id);
      expect(ids).toContain(a1);
      expect(ids).not.toContain(a2);
      expect(ids).not.toContain(b);
      expect(res.body.data.every((s: { subject_id: string }) => s.subject_id === 'user_a1')).toBe(true);
    });

    it('admin A sees and may change both members\' sessions of tenant A', async () => {
      for (const id of [a1, a2]) {
        await expect(t.call(KEYS.adminA, 'GET', `/v1/sessions/${id}`)).resolves.toMatchObject({ status: 200 });
      }
      const list = await t.call(KEYS.adminA, 'GET', '/v1/sessions?limit=100');
      const ids = list.body.data.map((s: { id: string }) => s.id);
      expect(ids).toEqual(expect.arrayContaining([a1, a2]));
      expect(ids).not.toContain(b);
      const upd = await t.call(KEYS.adminA, 'POST', `/v1/sessions/${a2}`, { metadata: { reviewed: 'yes' } });
      expect(upd.status).toBe(200);
      expect(upd.body.subject_id).toBe('user_a2');
    });

    it('tenant B (admin or member) never sees tenant A: 404, and A never sees B', async () => {
      for (const key of [KEYS.adminB, KEYS.memberB]) {
        const foreign = await notFoundShape(key, 'GET', `/v1/sessions/${a1}`);
        const missing = await notFoundShape(key, 'GET', `/v1/sessions/${randomId}`);
        expect(foreign).toEqual(missing);
      }
      for (const key of [KEYS.adminA, KEYS.memberA1]) {
        await expect(t.call(key, 'GET', `/v1/sessions/${b}`)).resolves.toMatchObject({ status: 404 });
      }
      const list = await t.call(KEYS.adminB, 'GET', '/v1/sessions?limit=100');
      expect(list.body.data.map((s: { id: string }) => s.id)).toEqual([b]);
    });

    it('a foreign session id as a list cursor is 400 invalid_cursor, like a missing one', async () => {
      for (const after of [a2, b, randomId]) {
        const res = await t.call(KEYS.memberA1, 'GET', `/v1/sessions?after=${after}`);
        expect(res.status).toBe(400);
        expect(res.body.error.code).toBe('invalid_cursor');
      }
    });

    it('foreign sessions were not changed by the failed attempts', async () => {
      const res = await t.call(KEYS.memberA2, 'GET', `/v1/sessions/${a2}`);
      expect(res.status).toBe(200);
      expect(res.body.title).toBe('a2');
      expect(res.body.status).toBe('active');
    });

    it('/v1/admin/* is 403 forbidden for members and open to admins', async () => {
      for (const key of [KEYS.memberA1, KEYS.memberB]) {
        const res = await t.call(key, 'GET', '/v1/admin/audit');
        expect(res.status).toBe(403);
        expect(res.body.error).toMatchObject({ code: 'forbidden', type: 'permission', retryable: false });
      }
      const admin = await t.call(KEYS.adminA, 'GET', '/v1/admin/audit');
      expect(admin.status).toBe(200);
      const anon = await t.call(null, 'GET', '/v1/admin/audit');
      expect(anon.status).toBe(401);
    });
  });
});
