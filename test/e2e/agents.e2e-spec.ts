import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

jest.setTimeout(60_000);

describe('GET /v1/agents', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('needs an API key', async () => {
    const res = await t.call(null, 'GET', '/v1/agents');
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('unauthorized');
  });

  it.each([KEYS.memberA1, KEYS.adminB])('lists the configured agents sorted by id (any key: %s)', async (key) => {
    const res = await t.call(key, 'GET', '/v1/agents');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ object: 'list', first_id: 'assistant', last_id: 'triage', has_more: false });
    expect(res.body.data.map((a: { id: string }) => a.id)).toEqual(['assistant', 'billing', 'research_lead', 'support_agent', 'triage']);
    // The multi-agent examples (CONTRACT 16): triage hands off to billing; research_lead runs subagents.
    const multi: Record<string, unknown[]> = { triage: [[{ agent_id: 'billing', version: '1' }], null], research_lead: [[], { enabled: true, agents: null, max_concurrent: 3 }] };
    for (const a of res.body.data) {
      // CONTRACT section 13: file and API agents are listed together with their `source`.
      expect(Object.keys(a).sort()).toEqual(['created_at', 'description', 'handoffs', 'id', 'model', 'object', 'source', 'subagents', 'tools', 'version']);
      expect([a.handoffs, a.subagents]).toEqual(multi[a.id] ?? [[], null]);
      expect(a.object).toBe('agent');
      expect(a.source).toBe('file');
    }
  });

  it('shows each tool with its risk, visibility, idempotency and executor', async () => {
    const res = await t.call(KEYS.memberA1, 'GET', '/v1/agents/support_agent');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: 'support_agent', object: 'agent', version: '2', model: 'scripted', description: expect.any(String) });
    const tools = Object.fromEntries(res.body.tools.map((x: Record<string, unknown>) => [x.name, x]));
    expect(Object.keys(tools)).toEqual(['get_order', 'create_ticket', 'notify_customer', 'lookup_customer', 'read_attachment', 'get_time', 'slow_tool', 'flaky_tool']);
    expect(tools.create_ticket).toEqual({
      name: 'create_ticket',
      type: 'builtin',
      description: expect.any(String),
      risk: 'approve',
      visibility: 'public',
      idempotent: true,
      executor: 'server',
      parameters: expect.objectContaining({ type: 'object', required: expect.arrayContaining(['order_id']) }),
    });
    expect(tools.get_order.parameters).toMatchObject({ type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] });
    // A client tool's schema is what the client must answer to.
    expect(tools.lookup_customer.parameters).toMatchObject({ type: 'object', properties: expect.any(Object) });
    expect(tools.lookup_customer).toMatchObject({ risk: 'auto', visibility: 'private', idempotent: false, executor: 'client' });
    const assistant = await t.call(KEYS.memberA1, 'GET', '/v1/agents/assistant');
    expect(assistant.body.tools.find((x: { name: string }) => x.name === 'calculator')).toMatchObject({ risk: 'suggest' });
  });

  it('pages with after, limit and order', async () => {
    const p1 = await t.call(KEYS.memberA1, 'GET', '/v1/agents?limit=1');
    expect(p1.status).toBe(200);
    expect(p1.body).toMatchObject({ first_id: 'assistant', last_id: 'assistant', has_more: true });
    const p2 = await t.call(KEYS.memberA1, 'GET', `/v1/agents?limit=1&after=${p1.body.last_id}`);
    expect(p2.body).toMatchObject({ first_id: 'billing', last_id: 'billing', has_more: true });
    const desc = await t.call(KEYS.memberA1, 'GET', '/v1/agents?order=desc');
    expect(desc.body.data.map((a: { id: string }) => a.id)).toEqual(['triage', 'support_agent', 'research_lead', 'billing', 'assistant']);
    const empty = await t.call(KEYS.memberA1, 'GET', '/v1/agents?after=triage');
    expect(empty.body).toEqual({ object: 'list', data: [], first_id: null, last_id: null, has_more: false });
  });

  it('pages the versions of an agent with the same after, limit and order (after: a version)', async () => {
    const all = await t.call(KEYS.memberA1, 'GET', '/v1/agents/support_agent/versions');
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ object: 'list', has_more: false });
    expect(all.body.data.map((a: { version: string }) => a.version)).toEqual(['1', '2']);
    const p1 = await t.call(KEYS.memberA1, 'GET', '/v1/agents/support_agent/versions?limit=1');
    expect(p1.body.data.map((a: { version: string }) => a.version)).toEqual(['1']);
    expect(p1.body.has_more).toBe(true);
    const p2 = await t.call(KEYS.memberA1, 'GET', '/v1/agents/support_agent/versions?limit=1&after=1');
    expect(p2.body.data.map((a: { version: string }) => a.version)).toEqual(['2']);
    expect(p2.body.has_more).toBe(false);
    const desc = await t.call(KEYS.memberA1, 'GET', '/v1/agents/support_agent/versions?order=desc');
    expect(desc.body.data.map((a: { version: string }) => a.version)).toEqual(['2', '1']);
    // The query was ignored (200) before: every parameter is checked and named.
    const bad = await t.call(KEYS.memberA1, 'GET', '/v1/agents/support_agent/versions?after=%00&limit=0x10&order=sideways');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_request');
    expect(bad.body.error.details.errors.map((e: { field: string }) => e.field)).toEqual(['after']);
    const bad2 = await t.call(KEYS.memberA1, 'GET', '/v1/agents/support_agent/versions?limit=0x10&order=sideways');
    expect(bad2.body.error.details.errors.map((e: { field: string }) => e.field)).toEqual(['limit', 'order']);
    const cursor = await t.call(KEYS.memberA1, 'GET', '/v1/agents/support_agent/versions?after=0x10');
    expect(cursor.status).toBe(400);
    expect(cursor.body.error.code).toBe('invalid_cursor');
  });

  it.each<[string, number, string]>([
    ['/v1/agents?after=nobody', 400, 'invalid_cursor'],
    ['/v1/agents?limit=0', 400, 'invalid_request'],
    ['/v1/agents?limit=101', 400, 'invalid_request'],
    ['/v1/agents?order=up', 400, 'invalid_request'],
    ['/v1/agents/nobody', 404, 'agent_not_found'],
  ])('%s -> %i %s', async (path, status, code) => {
    const res = await t.call(KEYS.memberA1, 'GET', path);
    expect(res.status).toBe(status);
    expect(res.body.error).toMatchObject({ code, request_id: expect.any(String) });
    expect(res.headers.get('x-request-id')).toBe(res.body.error.request_id);
  });

  it('is documented in the OpenAPI document', async () => {
    const res = await t.call(null, 'GET', '/docs-json');
    expect(res.status).toBe(200);
    const list = res.body.paths['/v1/agents'].get;
    const one = res.body.paths['/v1/agents/{id}'].get;
    expect(list.tags).toEqual(['Agents']);
    expect(list.responses['200'].content['application/json'].schema.$ref).toBe('#/components/schemas/AgentListResponseDto');
    expect(Object.keys(one.responses)).toEqual(expect.arrayContaining(['200', '401', '404']));
    expect(res.body.components.schemas.AgentToolDto.properties.risk.enum).toEqual(['auto', 'suggest', 'approve']);
  });
});
