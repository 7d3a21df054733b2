import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

async function raw(t: TestApp, method: string, path: string, body: string | undefined, headers: Record<string, string>) {
  const res = await fetch(t.url + path, { method, headers: { authorization: `Bearer ${KEYS.memberA1}`, ...headers }, body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
}

describe('foundation e2e: HTTP envelope, body limits, Swagger, health', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ BODY_MAX_BYTES: '2048' });
  });
  afterAll(async () => {
    await t.close();
  });

  describe('request bodies', () => {
    it('malformed JSON -> 400 invalid_request envelope', async () => {
      const res = await raw(t, 'POST', '/v1/sessions', '{"title": "x",', { 'content-type': 'application/json' });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', type: 'invalid_request' });
      expect(res.body.error.details.errors).toEqual([{ field: 'body', message: 'malformed JSON' }]);
      expect(res.headers.get('x-request-id')).toBe(res.body.error.request_id);
    });

    it('text/plain -> 415 unsupported_media_type', async () => {
      const res = await raw(t, 'POST', '/v1/sessions', 'hello', { 'content-type': 'text/plain' });
      expect(res.status).toBe(415);
      expect(res.body.error).toMatchObject({ code: 'unsupported_media_type', type: 'invalid_request' });
    });

    it('a body over BODY_MAX_BYTES -> 413 payload_too_large, nothing created', async () => {
      const before = await t.call(KEYS.memberA1, 'GET', '/v1/sessions?limit=100');
      const big = JSON.stringify({ title: 'x', metadata: { a: 'y'.repeat(500), b: 'y'.repeat(500), c: 'y'.repeat(500), d: 'y'.repeat(500), e: 'y'.repeat(500) } });
      expect(Buffer.byteLength(big)).toBeGreaterThan(2048);
      const res = await raw(t, 'POST', '/v1/sessions', big, { 'content-type': 'application/json' });
      expect(res.status).toBe(413);
      expect(res.body.error).toMatchObject({ code: 'payload_too_large', type: 'invalid_request', retryable: false });
      const after = await t.call(KEYS.memberA1, 'GET', '/v1/sessions?limit=100');
      expect(after.body.data).toHaveLength(before.body.data.length);
    });

    it('a body just under BODY_MAX_BYTES is accepted', async () => {
      const ok = JSON.stringify({ title: 'fits', metadata: { a: 'y'.repeat(500), b: 'y'.repeat(500), c: 'y'.repeat(500) } });
      expect(Buffer.byteLength(ok)).toBeLessThan(2048);
      const res = await raw(t, 'POST', '/v1/sessions', ok, { 'content-type': 'application/json' });
      expect(res.status).toBe(201);
    });

    it('an empty body, with or without a JSON content type, means no fields ({}); whitespace is malformed', async () => {
      const empty = await raw(t, 'POST', '/v1/sessions', '', { 'content-type': 'application/json' });
      expect(empty.status).toBe(201);
      const none = await raw(t, 'POST', '/v1/sessions', undefined, {});
      expect(none.status).toBe(201);
      const blank = await raw(t, 'POST', '/v1/sessions', ' ', { 'content-type': 'application/json' });
      expect(blank.status).toBe(400);
      expect(blank.body.error.code).toBe('invalid_request');
      const proto = await raw(t, 'POST', '/v1/sessions', '{"__proto__":{"x":1}}', { 'content-type': 'application/json' });
      expect(proto.status).toBe(400);
    });

    it('no error body carries a stack trace or SQL', async () => {
      const responses = await Promise.all([
        raw(t, 'POST', '/v1/sessions', '{bad', { 'content-type': 'application/json' }),
        raw(t, 'GET', "/v1/sessions/sess_' OR 1=1 --", undefined, {}),
        raw(t, 'GET', '/v1/sessions?after=%27%3B%20DROP%20TABLE%20sessions', undefined, {}),
      ]);
      for (const r of responses) {
        expect(r.status).toBeGreaterThanOrEqual(400);
        expect(r.text).not.toMatch(/\bat .+:\d+:\d+|SELECT|FROM "|node_modules|QueryFailedError/);
      }
    });
  });

  describe('Swagger', () => {
    it('/docs serves the Swagger UI', async () => {
      const res = await fetch(`${t.url}/docs`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/text\/html/);
      await expect(res.text()).resolves.toMatch(/swagger/i);
    });

    it('/docs-json is OpenAPI 3 with every session route, a bearer scheme and the shared error schema', async () => {
      const res = await t.call(null, 'GET', '/docs-json');
      expect(res.status).toBe(200);
      const doc = res.body;
      expect(doc.openapi).toMatch(/^3\./);
      const schemes = Object.values(doc.components.securitySchemes) as Array<{ type: string; scheme: string }>;
      expect(schemes).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'http', scheme: 'bearer' })]));
      expect(doc.components.schemas.ErrorEnvelopeDto).toBeDefined();

      const expected: Array<[string, string]> = [
        ['/v1/sessions', 'post'],
        ['/v1/sessions', 'get'],
        ['/v1/sessions/{id}', 'get'],
        ['/v1/sessions/{id}', 'post'],
        ['/v1/sessions/{id}', 'delete'],
        ['/v1/sessions/{id}/archive', 'post'],
      ];
      for (const [path, method] of expected) {
        const op = doc.paths[path]?.[method];
        expect({ path, method, documented: Boolean(op) }).toEqual({ path, method, documented: true });
        expect(op.tags?.length).toBeGreaterThan(0);
        expect(op.summary).toEqual(expect.any(String));
        const codes = Object.keys(op.responses);
        expect(codes.some((c) => c.startsWith('2'))).toBe(true);
        expect(op.responses['401']?.content?.['application/json']?.schema?.$ref).toBe('#/components/schemas/ErrorEnvelopeDto');
      }
    });

    it('every documented /v1 operation has tags, a summary, a 2xx response and errors in the shared schema', async () => {
      const doc = (await t.call(null, 'GET', '/docs-json')).body;
      const problems: string[] = [];
      for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
        if (!path.startsWith('/v1/')) continue;
        for (const [method, op] of Object.entries(ops)) {
          const where = `${method.toUpperCase()} ${path}`;
          if (!op.tags?.length) problems.push(`${where}: no tags`);
          if (!op.summary) problems.push(`${where}: no summary`);
          const codes = Object.keys(op.responses ?? {});
          if (!codes.some((c) => /^2/.test(c))) problems.push(`${where}: no 2xx response`);
          for (const c of codes.filter((x) => /^[45]/.test(x))) {
            const ref = op.responses[c]?.content?.['application/json']?.schema?.$ref;
            if (ref && ref !== '#/components/schemas/ErrorEnvelopeDto') problems.push(`${where}: ${c} uses ${ref}`);
          }
        }
      }
      expect(problems).toEqual([]);
    });

    it('health routes are not in the document', async () => {
      const doc = (await t.call(null, 'GET', '/docs-json')).body;
      expect(Object.keys(doc.paths)).not.toContain('/healthz');
    });
  });

  describe('health', () => {
    it('/healthz -> 200 ok', async () => {
      const res = await t.call(null, 'GET', '/healthz');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'ok' });
    });

    it('/readyz -> 200 ready once migrated, naming the database kind', async () => {
      const res = await t.call(null, 'GET', '/readyz');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        status: 'ready',
        database: process.env.DATABASE_URL ? 'postgres' : 'embedded',
        notifier: process.env.DATABASE_URL
          ? { ready: true, kind: 'postgres', connected: true, degraded: false }
          : { ready: true, kind: 'in_process', connected: true, degraded: false },
      });
    });
  });
});

describe('foundation e2e: DOCS_ENABLED=false', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ DOCS_ENABLED: 'false' });
  });
  afterAll(async () => {
    await t.close();
  });

  it.each(['/docs', '/docs-json'])('%s -> 404 not_found envelope', async (path) => {
    const res = await t.call(null, 'GET', path);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
  });

  it('the API itself still works', async () => {
    await expect(t.call(KEYS.memberA1, 'GET', '/v1/sessions')).resolves.toMatchObject({ status: 200 });
  });
});
