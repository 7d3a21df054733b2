import { describeRequest, FinishedRequest, isAuditedRequest, needsRunSessionLookup, noteAuditSession, notedAuditSession, resourceOf } from './describe-request';

const principal = { tenantId: 'tenant_a', subjectId: 'user_a1', role: 'member' as const, keyId: 'key_1' };
const req = (over: Partial<FinishedRequest>): FinishedRequest => ({
  principal,
  method: 'POST',
  url: '/v1/sessions',
  route: '/v1/sessions',
  params: {},
  query: {},
  body: {},
  requestId: 'req_1',
  idempotencyKey: null,
  status: 201,
  response: null,
  replayed: false,
  ...over,
});

describe('isAuditedRequest', () => {
  it.each([
    ['POST', '/v1/sessions', true],
    ['DELETE', '/v1/sessions/sess_1', true],
    ['PATCH', '/v1/x', true],
    ['PUT', '/v1/x', true],
    ['GET', '/v1/sessions', false],
    ['POST', '/healthz', false],
    ['POST', '/v10/x', false],
    ['POST', null, false],
  ])('%s %s -> %s', (method, route, expected) => {
    expect(isAuditedRequest(method, route)).toBe(expected);
  });
});

describe('resourceOf', () => {
  it.each([
    ['/v1/sessions', {}, 201, { object: 'session', id: 'sess_1' }, { type: 'session', id: 'sess_1' }],
    ['/v1/sessions', {}, 400, { error: { code: 'invalid_request' } }, { type: 'session', id: null }],
    ['/v1/sessions/:id', { id: 'sess_1' }, 409, { error: { code: 'session_conflict' } }, { type: 'session', id: 'sess_1' }],
    ['/v1/sessions/:id/archive', { id: 'sess_1' }, 200, { object: 'session', id: 'sess_1' }, { type: 'session', id: 'sess_1' }],
    ['/v1/sessions/:id', { id: 'sess_1' }, 204, null, { type: 'session', id: 'sess_1' }],
    ['/v1/sessions/:id/runs', { id: 'sess_1' }, 202, { run_id: 'run_1', session_id: 'sess_1' }, { type: 'run', id: 'run_1' }],
    ['/v1/sessions/:id/runs', { id: 'sess_1' }, 409, { error: { code: 'session_busy' } }, { type: 'session', id: 'sess_1' }],
    ['/v1/runs/:id/cancel', { id: 'run_1' }, 202, { object: 'run', id: 'run_1' }, { type: 'run', id: 'run_1' }],
    ['/v1/runs/:id/tool_outputs', { id: 'run_1' }, 200, { object: 'run', id: 'run_1' }, { type: 'run', id: 'run_1' }],
    ['/v1/runs/:id/approvals/:approval_id', { id: 'run_1', approval_id: 'apr_1' }, 409, null, { type: 'approval', id: 'apr_1' }],
    ['/v1/attachments', {}, 202, { object: 'attachment', id: 'att_1' }, { type: 'attachment', id: 'att_1' }],
  ])('%s %j %d', (route, params, status, response, expected) => {
    expect(resourceOf(route, params as Record<string, string>, status, response)).toEqual(expected);
  });
});

describe('describeRequest', () => {
  it('records actor, action (route template), resource, ids, outcome and the unredacted body', () => {
    const r = describeRequest(
      req({
        url: '/v1/sessions/sess_1?x=1',
        route: '/v1/sessions/:id',
        params: { id: 'sess_1' },
        query: { x: '1' },
        body: { title: 'secret plan', password: 'hunter2' },
        status: 409,
        response: { error: { code: 'session_conflict' } },
        idempotencyKey: 'k1',
      }),
    );
    expect(r).toEqual({
      tenantId: 'tenant_a',
      actorSubjectId: 'user_a1',
      actorRole: 'member',
      actorKeyId: 'key_1',
      action: 'POST /v1/sessions/:id',
      resourceType: 'session',
      resourceId: 'sess_1',
      sessionId: 'sess_1',
      runId: null,
      requestId: 'req_1',
      outcome: 'session_conflict',
      status: 409,
      data: {
        request: {
          method: 'POST',
          url: '/v1/sessions/sess_1?x=1',
          params: { id: 'sess_1' },
          query: { x: '1' },
          body: { title: 'secret plan', password: 'hunter2' },
          idempotency_key: 'k1',
        },
        response: { status: 409, error_code: 'session_conflict', idempotent_replayed: false },
      },
    });
  });

  it('takes session and run ids from the response of a run creation and marks replays', () => {
    const r = describeRequest(
      req({ url: '/v1/sessions/sess_1/runs', route: '/v1/sessions/:id/runs', params: { id: 'sess_1' }, status: 202, response: { run_id: 'run_1', session_id: 'sess_1' }, replayed: true }),
    );
    expect(r).toMatchObject({ resourceType: 'run', resourceId: 'run_1', sessionId: 'sess_1', runId: 'run_1', outcome: 'ok' });
    expect((r.data.response as Record<string, unknown>).idempotent_replayed).toBe(true);
  });

  it('uses http_<status> when an error response has no contract body', () => {
    expect(describeRequest(req({ status: 502, response: null })).outcome).toBe('http_502');
  });

  it('takes the session a handler noted when neither the route nor the response names one', () => {
    const decision = req({
      url: '/v1/runs/run_1/approvals/apr_1',
      route: '/v1/runs/:id/approvals/:approval_id',
      params: { id: 'run_1', approval_id: 'apr_1' },
      status: 200,
      response: { object: 'approval', id: 'apr_1', run_id: 'run_1' },
    });
    expect(describeRequest(decision)).toMatchObject({ resourceType: 'approval', resourceId: 'apr_1', runId: 'run_1', sessionId: null });
    expect(describeRequest({ ...decision, sessionId: 'sess_1' })).toMatchObject({ resourceType: 'approval', runId: 'run_1', sessionId: 'sess_1' });
  });

  it('keeps no request body for a route that withholds it, and records the result a handler noted', () => {
    const put = req({
      method: 'PUT',
      url: '/v1/secrets/CRM_TOKEN',
      route: '/v1/secrets/:name',
      params: { name: 'CRM_TOKEN' },
      body: { value: 'the-value' },
      status: 200,
      response: { name: 'CRM_TOKEN', object: 'secret', version: 2 },
    });
    const withheld = describeRequest({ ...put, bodyWithheld: true, result: { name: 'CRM_TOKEN', version: 2 } });
    expect(withheld).toMatchObject({ action: 'PUT /v1/secrets/:name', resourceType: 'secret', resourceId: 'CRM_TOKEN' });
    expect(withheld.data).toMatchObject({ request: { body: null, body_withheld: true }, result: { name: 'CRM_TOKEN', version: 2 } });
    expect(JSON.stringify(withheld)).not.toContain('the-value');
    // Without the marks, as before: the body as sent, no result.
    const plain = describeRequest(put);
    expect(plain.data).toMatchObject({ request: { body: { value: 'the-value' } } });
    expect(plain.data).not.toHaveProperty('result');
    expect(plain.data.request).not.toHaveProperty('body_withheld');
  });
});

describe('noteAuditSession', () => {
  it('remembers the session per request object', () => {
    const a = {};
    const b = {};
    noteAuditSession(a, 'sess_1');
    expect(notedAuditSession(a)).toBe('sess_1');
    expect(notedAuditSession(b)).toBeNull();
  });
});

describe('needsRunSessionLookup', () => {
  const rec = (over: Partial<{ sessionId: string | null; runId: string | null; outcome: string | null; status: number | null }>) => ({
    sessionId: null,
    runId: 'run_1',
    outcome: 'ok',
    status: 200,
    ...over,
  });
  it.each([
    ['a replayed decision (no session in the body)', rec({}), true],
    ['a business error on a run', rec({ outcome: 'run_finished', status: 409 }), true],
    ['a validation error on a run', rec({ outcome: 'invalid_request', status: 400 }), true],
    ['the session is already known', rec({ sessionId: 'sess_1' }), false],
    ['no run', rec({ runId: null, outcome: 'invalid_request', status: 400 }), false],
    ['a run the caller cannot see', rec({ outcome: 'run_not_found', status: 404 }), false],
    ['rate limited', rec({ outcome: 'rate_limited', status: 429 }), false],
    ['a server error', rec({ outcome: 'unavailable', status: 503 }), false],
  ])('%s -> %s', (_, record, expected) => {
    expect(needsRunSessionLookup(record)).toBe(expected);
  });
});
