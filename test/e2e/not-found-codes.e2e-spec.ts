import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * Every 404 a route with an id in its path answers names the resource (`input_not_found`, ...):
 * a bare `not_found` is only for a route that does not exist. Walks the served OpenAPI document,
 * so a route added later is checked without touching this test.
 */
describe('404 codes name their resource on every route with an id', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  const ULID = '01J0000000000000000000NOPE';
  /** A well-formed id that names nothing, by the collection before the parameter. */
  const PREFIX: Record<string, string> = {
    sessions: 'sess', runs: 'run', messages: 'msg', attachments: 'att', approvals: 'apr', inputs: 'inp',
    webhooks: 'wh', automations: 'auto', invocations: 'ainv', deliveries: 'whd', callbacks: 'call', tool_outputs: 'call',
  };
  const idFor = (collection: string, param: string) => {
    if (collection === 'agents') return 'no_such_agent';
    if (collection === 'secrets') return 'NO_SUCH_SECRET';
    const prefix = PREFIX[collection] ?? param.replace(/_id$/, '');
    return `${prefix}_${ULID}`;
  };
  const fill = (path: string) => {
    const segments = path.split('/');
    return segments.map((s, i) => (s.startsWith('{') ? idFor(segments[i - 1], s.slice(1, -1)) : s)).join('/');
  };

  it('no GET, DELETE or POST route with an id parameter answers a bare not_found for a missing id', async () => {
    const doc = await t.call(null, 'GET', '/docs-json');
    expect(doc.status).toBe(200);
    const checked: string[] = [];
    const bare: string[] = [];
    for (const [path, item] of Object.entries<any>(doc.body.paths)) {
      if (!path.includes('{')) continue;
      for (const method of ['get', 'delete', 'post']) {
        if (!item[method]) continue;
        const url = fill(path);
        // Admin: admin-only routes must answer their 404 too, not a 403.
        const res = await t.call(KEYS.adminA, method.toUpperCase(), url, method === 'post' ? {} : undefined, method === 'post' ? { 'idempotency-key': `nf-${checked.length}` } : {});
        checked.push(`${method.toUpperCase()} ${path} -> ${res.status} ${res.body?.error?.code ?? ''}`);
        if (res.body?.error?.code === 'not_found' || (res.status === 404 && !/^[a-z_]+_not_found$/.test(res.body?.error?.code ?? ''))) {
          bare.push(`${method.toUpperCase()} ${path} -> ${res.status} ${res.body?.error?.code}`);
        }
      }
    }
    // The walk really covered the routes that had a bare code once.
    expect(checked.some((c) => c.startsWith('GET /v1/inputs/{'))).toBe(true);
    expect(checked.some((c) => c.startsWith('GET /v1/webhooks/{'))).toBe(true);
    expect(checked.length).toBeGreaterThan(20);
    expect(bare).toEqual([]);
  });

  it('GET /v1/inputs/{id} for a missing id is 404 input_not_found with the id in details', async () => {
    const id = `inp_${ULID}`;
    const r = await t.call(KEYS.memberA1, 'GET', `/v1/inputs/${id}`);
    expect(r.status).toBe(404);
    expect(r.body.error).toMatchObject({ code: 'input_not_found', type: 'not_found', details: { input_id: id } });
    const malformed = await t.call(KEYS.memberA1, 'GET', '/v1/inputs/inp_nope');
    expect(malformed.status).toBe(404);
    expect(malformed.body.error).toMatchObject({ code: 'input_not_found', details: { input_id: 'inp_nope' } });
  });

  it('the OpenAPI document lists the resource codes, never a bare not_found, on routes with an id', async () => {
    const doc = await t.call(null, 'GET', '/docs-json');
    const offenders: string[] = [];
    for (const [path, item] of Object.entries<any>(doc.body.paths)) {
      if (!path.includes('{')) continue;
      for (const [method, op] of Object.entries<any>(item)) {
        const examples = op.responses?.['404']?.content?.['application/json']?.examples ?? {};
        const codes = Object.values<any>(examples).map((e) => e.value?.error?.code);
        if (codes.includes('not_found') || /`not_found`/.test(op.responses?.['404']?.description ?? '')) offenders.push(`${method.toUpperCase()} ${path}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});
