import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

describe('foundation e2e: sessions CRUD, validation, pagination', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  const create = (body: unknown = {}, key: string = KEYS.memberA1) => t.call(key, 'POST', '/v1/sessions', body);

  describe('create and get', () => {
    it('creates a session with defaults and the pinned agent, exactly as the contract shows (with section 7\'s default_concurrency)', async () => {
      const res = await create({ title: 'Order O-1001', metadata: { customer: 'acme' } });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.stringMatching(/^sess_[0-9A-HJKMNP-TV-Z]{26}$/),
        object: 'session',
        tenant_id: 'tenant_a',
        subject_id: 'user_a1',
        agent_id: 'support_agent',
        agent: { id: 'support_agent', version: '2', model: 'scripted' },
        title: 'Order O-1001',
        status: 'active',
        revision: 1,
        active_run_id: null,
        default_concurrency: 'steer', // seed 002: steer by default
        work_status: 'idle',
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        updated_at: expect.any(String),
        last_active_at: expect.any(String),
        expires_at: null,
        ttl: null,
        metadata: { customer: 'acme' },
      });
      const got = await t.call(KEYS.memberA1, 'GET', `/v1/sessions/${res.body.id}`);
      expect(got.status).toBe(200);
      expect(got.body).toEqual(res.body);
    });

    it('an explicit agent_id pins that agent', async () => {
      const res = await create({ agent_id: 'assistant' });
      expect(res.status).toBe(201);
      expect(res.body.agent).toMatchObject({ id: 'assistant', version: '1' });
      expect(res.body.title).toBeNull();
      expect(res.body.metadata).toEqual({});
    });

    it('an unknown agent is 404 agent_not_found', async () => {
      const res = await create({ agent_id: 'no_such_agent' });
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: 'agent_not_found', details: { agent_id: 'no_such_agent' } });
    });

    it('a GET of a malformed or unknown id is 404 session_not_found', async () => {
      for (const id of ['nope', 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B', 'run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B']) {
        const res = await t.call(KEYS.memberA1, 'GET', `/v1/sessions/${id}`);
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe('session_not_found');
      }
    });
  });

  describe('validation', () => {
    it.each(['id', 'tenant_id', 'subject_id', 'status', 'revision', 'created_at', 'updated_at', 'last_active_at', 'active_run_id', 'object'])(
      'server-owned field %s in a create body -> 400 invalid_request naming it in details.errors',
      async (field) => {
        const res = await create({ title: 'x', [field]: 'forged' });
        expect(res.status).toBe(400);
        expect(res.body.error.code).toBe('invalid_request');
        expect(res.body.error.details.errors).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
      },
    );

    it('server-owned fields in an update body are rejected too', async () => {
      const id = (await create()).body.id;
      const res = await t.call(KEYS.memberA1, 'POST', `/v1/sessions/${id}`, { revision: 9, status: 'archived' });
      expect(res.status).toBe(400);
      expect(res.body.error.details.errors.map((e: { field: string }) => e.field).sort()).toEqual(['revision', 'status']);
      const got = await t.call(KEYS.memberA1, 'GET', `/v1/sessions/${id}`);
      expect(got.body).toMatchObject({ revision: 1, status: 'active' });
    });

    const METADATA_RULE = 'metadata must be an object of at most 16 string keys (<= 64 chars) with string values (<= 512 chars)';
    it.each([
      ['a non-string title', { title: 5 }, 'title', 'title must be a string'],
      ['a too long title', { title: 'x'.repeat(201) }, 'title', 'title must be shorter than or equal to 200 characters'],
      ['a too long non-string title', { title: ['x'.repeat(201)] }, 'title', 'title must be a string'],
      ['17 metadata keys', { metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }, 'metadata', METADATA_RULE],
      ['a metadata value over 512 chars', { metadata: { k: 'x'.repeat(513) } }, 'metadata', METADATA_RULE],
      ['a non-string metadata value', { metadata: { k: 1 } }, 'metadata', METADATA_RULE],
      ['metadata as an array', { metadata: ['a'] }, 'metadata', METADATA_RULE],
      ['a malformed agent_id', { agent_id: 'Bad Agent!' }, 'agent_id', 'agent_id must be an agent id such as support_agent'],
      ['a non-string agent_id', { agent_id: 5 }, 'agent_id', 'agent_id must be a string'],
    ])('%s -> 400 with one message for the field', async (_, body, field, message) => {
      const res = await create(body);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', type: 'invalid_request', retryable: false, message });
      expect(res.body.error.details.errors).toEqual([{ field, message }]);
    });

    it('several invalid fields: one message each, the envelope message joins them', async () => {
      const res = await create({ agent_id: 5, title: 7, metadata: 'x' });
      expect(res.status).toBe(400);
      expect(res.body.error.details.errors).toEqual([
        { field: 'agent_id', message: 'agent_id must be a string' },
        { field: 'title', message: 'title must be a string' },
        { field: 'metadata', message: METADATA_RULE },
      ]);
      expect(res.body.error.message).toBe(`agent_id must be a string; title must be a string; ${METADATA_RULE}`);
    });

    it('metadata at the limits (16 keys, 512-char values) is accepted', async () => {
      const metadata = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, 'x'.repeat(512)]));
      const res = await create({ metadata });
      expect(res.status).toBe(201);
      expect(res.body.metadata).toEqual(metadata);
    });

    it('a JSON body that is not an object is 400', async () => {
      const res = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', [1, 2]);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    });
  });

  describe('update, archive, delete', () => {
    it('updates title and metadata with one revision bump; a no-op keeps the revision', async () => {
      const s = (await create({ title: 'old' })).body;
      const upd = await t.call(KEYS.memberA1, 'POST', `/v1/sessions/${s.id}`, { title: 'new', metadata: { a: 'b' }, expected_revision: 1 });
      expect(upd.status).toBe(200);
      expect(upd.body).toMatchObject({ title: 'new', metadata: { a: 'b' }, revision: 2 });
      expect(upd.body.last_active_at).toBe(s.last_active_at);
      const noop = await t.call(KEYS.memberA1, 'POST', `/v1/sessions/${s.id}`, { title: 'new' });
      expect(noop.status).toBe(200);
      expect(noop.body.revision).toBe(2);
    });

    it('a stale expected_revision is 409 session_conflict with details.current_revision, and changes nothing', async () => {
      const s = (await create({ title: 'c' })).body;
      await t.call(KEYS.memberA1, 'POST', `/v1/sessions/${s.id}`, { title: 'c2' });
      const res = await t.call(KEYS.memberA1, 'POST', `/v1/sessions/${s.id}`, { title: 'stale', expected_revision: 1 });
      expect(res.status).toBe(409);
      expect(res.body.error).toMatchObject({
        code: 'session_conflict',
        type: 'conflict',
        retryable: false,
        details: { current_revision: 2, expected_revision: 1 },
      });
      const got = await t.call(KEYS.memberA1, 'GET', `/v1/sessions/${s.id}`);
      expect(got.body).toMatchObject({ title: 'c2', revision: 2 });
    });

    it('agent.model may be set to a known model; an unknown model is 400', async () => {
      const s = (await create()).body;
      const ok = await t.call(KEYS.memberA1, 'POST', `/v1/sessions/${s.id}`, { agent: { model: 'scripted' } });
      expect(ok.status).toBe(200);
      expect(ok.body.revision).toBe(1);
      const bad = await t.call(KEYS.memberA1, 'POST', `/v1/sessions/${s.id}`, { agent: { model: 'gpt-imaginary' } });
      expect(bad.status).toBe(400);
      expect(bad.body.error.code).toBe('invalid_request');
      expect(bad.body.error.details.errors).toEqual([expect.objectContaining({ field: 'agent.model' })]);
      const other = await t.call(KEYS.memberA1, 'POST', `/v1/sessions/${s.id}`, { agent: { id: 'assistant', model: 'scripted' } });
      expect(other.status).toBe(400);
    });

    it('archives: status archived, revision +1, history kept; archiving again is a no-op 200', async () => {
      const s = (await create({ title: 'to archive' })).body;
      const res = await t.call(KEYS.memberA1, 'POST', `/v1/sessions/${s.id}/archive`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: s.id, status: 'archived', revision: 2, title: 'to archive' });
      const again = await t.call(KEYS.memberA1, 'POST', `/v1/sessions/${s.id}/archive`, {});
      expect(again.status).toBe(200);
      expect(again.body.revision).toBe(2);
      const stale = await t.call(KEYS.memberA1, 'POST', `/v1/sessions/${s.id}/archive`, { expected_revision: 1 });
      expect(stale.status).toBe(409);
      expect(stale.body.error.details.current_revision).toBe(2);
      await expect(t.call(KEYS.memberA1, 'GET', `/v1/sessions/${s.id}`)).resolves.toMatchObject({ body: { status: 'archived' } });
    });

    it('deletes: 204 with no body, then 404 on GET, update, archive and a second delete', async () => {
      const s = (await create()).body;
      const del = await t.call(KEYS.memberA1, 'DELETE', `/v1/sessions/${s.id}`);
      expect(del.status).toBe(204);
      expect(del.text).toBe('');
      for (const [method, suffix, body] of [
        ['GET', '', undefined],
        ['POST', '', { title: 'x' }],
        ['POST', '/archive', {}],
        ['DELETE', '', undefined],
      ] as const) {
        const res = await t.call(KEYS.memberA1, method, `/v1/sessions/${s.id}${suffix}`, body);
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe('session_not_found');
      }
      const list = await t.call(KEYS.memberA1, 'GET', '/v1/sessions?limit=100');
      expect(list.body.data.map((x: { id: string }) => x.id)).not.toContain(s.id);
    });
  });

  describe('pagination', () => {
    let ids: string[];
    beforeAll(async () => {
      ids = [];
      for (let i = 0; i < 25; i++) {
        const res = await create({ title: `page ${i}` }, KEYS.memberA2);
        expect(res.status).toBe(201);
        ids.push(res.body.id);
      }
    });

    async function walk(order: 'asc' | 'desc' | null, limit: number) {
      const pages: Array<{ data: Array<{ id: string }>; first_id: string | null; last_id: string | null; has_more: boolean; object: string }> = [];
      let after: string | null = null;
      for (let guard = 0; guard < 50; guard++) {
        const qs = new URLSearchParams({ limit: String(limit) });
        if (order) qs.set('order', order);
        if (after) qs.set('after', after);
        const res = await t.call(KEYS.memberA2, 'GET', `/v1/sessions?${qs}`);
        expect(res.status).toBe(200);
        pages.push(res.body);
        if (!res.body.has_more) break;
        after = res.body.last_id;
      }
      return pages;
    }

    it('walks all 25 in asc order with limit 10: 10, 10, 5; has_more, first_id and last_id are right', async () => {
      const pages = await walk('asc', 10);
      expect(pages.map((p) => p.data.length)).toEqual([10, 10, 5]);
      expect(pages.map((p) => p.has_more)).toEqual([true, true, false]);
      for (const p of pages) {
        expect(p.object).toBe('list');
        expect(p.first_id).toBe(p.data[0].id);
        expect(p.last_id).toBe(p.data[p.data.length - 1].id);
      }
      expect(pages.flatMap((p) => p.data.map((s) => s.id))).toEqual(ids);
    });

    it('walks all 25 in desc order (the default) with limit 7', async () => {
      const pages = await walk(null, 7);
      expect(pages.map((p) => p.data.length)).toEqual([7, 7, 7, 4]);
      expect(pages.flatMap((p) => p.data.map((s) => s.id))).toEqual([...ids].reverse());
      const explicit = await walk('desc', 7);
      expect(explicit.flatMap((p) => p.data.map((s) => s.id))).toEqual([...ids].reverse());
    });

    it('default limit is 20; limit 100 returns everything with has_more false', async () => {
      const def = await t.call(KEYS.memberA2, 'GET', '/v1/sessions');
      expect(def.body.data).toHaveLength(20);
      expect(def.body.has_more).toBe(true);
      const all = await t.call(KEYS.memberA2, 'GET', '/v1/sessions?limit=100');
      expect(all.body.data).toHaveLength(25);
      expect(all.body.has_more).toBe(false);
    });

    it('a page after the last item is empty with null first_id/last_id', async () => {
      const res = await t.call(KEYS.memberA2, 'GET', `/v1/sessions?order=asc&after=${ids[24]}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ object: 'list', data: [], first_id: null, last_id: null, has_more: false });
    });

    it.each(['garbage', 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B'])('after=%s -> 400 invalid_cursor', async (after) => {
      const res = await t.call(KEYS.memberA2, 'GET', `/v1/sessions?after=${after}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_cursor', type: 'invalid_request' });
    });

    it.each([
      ['0', 'limit must not be less than 1'],
      ['101', 'limit must not be greater than 100'],
      ['-1', 'limit must not be less than 1'],
      ['ten', 'limit must be an integer number'],
      ['1.5', 'limit must be an integer number'],
    ])('limit=%s -> 400 invalid_request with one message', async (limit, message) => {
      const res = await t.call(KEYS.memberA2, 'GET', `/v1/sessions?limit=${limit}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', message });
      expect(res.body.error.details.errors).toEqual([{ field: 'limit', message }]);
    });

    it('order must be asc or desc; unknown query parameters are rejected', async () => {
      await expect(t.call(KEYS.memberA2, 'GET', '/v1/sessions?order=up')).resolves.toMatchObject({ status: 400 });
      await expect(t.call(KEYS.memberA2, 'GET', '/v1/sessions?offset=5')).resolves.toMatchObject({ status: 400 });
    });
  });
});
