import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { runInNewContext } from 'node:vm';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

type Json = any;

/**
 * "Try it out" as a new user does it in Swagger UI (/docs): every operation of /docs-json, in a
 * sensible order (create a session, start a run, read its events, approve, ...), sent with what
 * the page pre-fills - the documented examples as is (parameter examples, the body's named
 * examples, else a sample generated from the schema as Swagger UI does), path ids taken from
 * earlier responses - and passed through the request interceptor the page really runs (taken
 * from /docs/swagger-ui-init.js). Every answer must be 2xx, none a replay of an earlier one.
 */
describe('OpenAPI: every documented example succeeds when sent as is, in order', () => {
  let t: TestApp;
  let doc: Json;
  let interceptor: (req: { url: string; method: string; headers: Record<string, string>; body?: unknown }) => typeof req;
  let parameterMacro: (operation: unknown, parameter: Json) => unknown;
  const sent = new Set<string>();
  const examplesSent = new Set<string>();

  beforeAll(async () => {
    t = await startTestApp();
    doc = (await t.call(null, 'GET', '/docs-json')).body;
    // The page's init script, run as the browser would, hands its options to SwaggerUIBundle.
    const initJs = await (await fetch(`${t.url}/docs/swagger-ui-init.js`)).text();
    let options: Json = null;
    const SwaggerUIBundle = Object.assign((o: Json) => ((options = o), {}), { presets: { apis: {} }, plugins: { DownloadUrl: {} } });
    const window: Json = { location: { search: '', origin: t.url } };
    runInNewContext(initJs, { window, SwaggerUIBundle, SwaggerUIStandalonePreset: {}, crypto: globalThis.crypto });
    window.onload();
    interceptor = options?.requestInterceptor ?? ((r: Json) => r);
    // Swagger UI sets every parameter's default to what parameterMacro returns.
    parameterMacro = options?.parameterMacro ?? ((_o: unknown, p: Json) => p.default);
  });
  afterAll(async () => {
    await t?.close();
  });

  const deref = (schema: Json): Json => {
    let s = schema;
    while (s?.$ref) s = s.$ref.replace('#/', '').split('/').reduce((o: Json, k: string) => o[k], doc);
    return s;
  };

  /** What Swagger UI shows in a body without an example: property examples, defaults, enum[0], placeholders. */
  function sample(schema: Json): unknown {
    const s = deref(schema);
    if (s === undefined) return undefined;
    if (s.example !== undefined) return s.example;
    if (s.allOf) return Object.assign({}, ...s.allOf.map(sample));
    if (s.oneOf || s.anyOf) return sample((s.oneOf ?? s.anyOf)[0]);
    if (s.default !== undefined) return s.default;
    if (s.enum) return s.enum[0];
    const type = s.type ?? (s.properties ? 'object' : undefined);
    if (type === 'object') {
      const o: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(s.properties ?? {})) o[k] = sample(v);
      if (s.additionalProperties && typeof s.additionalProperties === 'object') for (const i of [1, 2, 3]) o[`additionalProp${i}`] = sample(s.additionalProperties);
      return o;
    }
    if (type === 'array') return [sample(s.items)];
    if (type === 'string') return s.format === 'date-time' ? new Date().toISOString() : 'string';
    if (type === 'integer' || type === 'number') return s.minimum ?? 0;
    if (type === 'boolean') return true;
    return {};
  }

  /** The body examples of an operation, by name (a lone `example` or a generated sample is "default"). */
  function bodyExamples(op: Json): Record<string, unknown> {
    const media = op.requestBody?.content?.['application/json'];
    if (!media) return {};
    if (media.examples) return Object.fromEntries(Object.entries(media.examples as Record<string, Json>).map(([k, v]) => [k, deref(v).value]));
    return { default: media.example ?? sample(media.schema) };
  }

  /**
   * Sends one operation as Swagger UI would. `ids` fills path parameters (else their example);
   * `example` picks a named body example (default: the first, which the page pre-fills).
   */
  async function tryItOut(method: string, path: string, ids: Record<string, string> = {}, opts: { example?: string; form?: FormData } = {}) {
    const op = doc.paths[path]?.[method];
    if (!op) throw new Error(`${method.toUpperCase()} ${path} is not documented`);
    let url = path;
    const query = new URLSearchParams();
    const headers: Record<string, string> = {};
    for (const p of op.parameters ?? []) {
      const example = p.example ?? p.schema?.example ?? parameterMacro(op, p) ?? p.schema?.default;
      if (p.in === 'path') {
        const v = ids[p.name] ?? example;
        if (v === undefined) throw new Error(`${method.toUpperCase()} ${path}: no value for path parameter ${p.name}`);
        url = url.replace(`{${p.name}}`, encodeURIComponent(String(v)));
      } else if (example !== undefined) {
        if (p.in === 'query') query.set(p.name, String(example));
        if (p.in === 'header') headers[p.name] = String(example);
      } else if (p.required) {
        // Swagger UI refuses to send a request without its required parameters; the interceptor may add them.
        if (p.in !== 'header') throw new Error(`${method.toUpperCase()} ${path}: required ${p.in} parameter ${p.name} has no example`);
      }
    }
    if (op.security?.length !== 0 && !path.startsWith('/metrics')) headers.Authorization = `Bearer ${KEYS.adminA}`;
    const okContent = Object.keys(op.responses['200']?.content ?? op.responses['201']?.content ?? op.responses['202']?.content ?? {});
    if (okContent.length) headers.Accept = okContent[0];
    let body: string | FormData | undefined;
    const examples = bodyExamples(op);
    const names = Object.keys(examples);
    if (names.length) {
      // A missing named example falls back to what the page pre-fills (the completeness check at the end still fails).
      const name = opts.example !== undefined && opts.example in examples ? opts.example : names[0];
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(examples[name]);
      examplesSent.add(`${method} ${path} ${name}`);
    } else if (opts.form) {
      body = opts.form;
    }
    const req = interceptor({ url: `${t.url}${url}${query.size ? `?${query}` : ''}`, method: method.toUpperCase(), headers, body });
    const res = await fetch(req.url, { method: req.method, headers: req.headers, body: req.body as string | FormData | undefined });
    const text = await res.text();
    let json: Json;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = text;
    }
    sent.add(`${method} ${path}`);
    const where = `${method.toUpperCase()} ${url}${opts.example ? ` (example ${opts.example})` : ''}`;
    expect({ where, status: res.status, ok: res.status >= 200 && res.status < 300, body: res.status >= 300 ? json : undefined }).toMatchObject({ where, ok: true });
    expect({ where, replayed: res.headers.get('idempotent-replayed') }).toEqual({ where, replayed: null });
    if (json && typeof json === 'object' && json.object === 'list') expect({ where, listed: json.data.length > 0 }).toEqual({ where, listed: true });
    return { status: res.status, body: json };
  }

  const runOf = (id: string) => t.call(KEYS.adminA, 'GET', `/v1/runs/${id}`).then((r) => r.body);
  async function until(id: string, pred: (run: Json) => boolean): Promise<Json> {
    const end = Date.now() + 20_000;
    for (;;) {
      const run = await runOf(id);
      if (pred(run)) return run;
      if (Date.now() > end) throw new Error(`run ${id} is ${run.status}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const terminal = (r: Json) => ['completed', 'failed', 'cancelled', 'expired', 'terminated'].includes(r.status);

  it('walks every operation', async () => {
    await tryItOut('get', '/metrics');
    await tryItOut('get', '/v1/agents');
    await tryItOut('get', '/v1/agents/{id}');
    // Agents by API (admin): create, a next version, read them, delete.
    const agent = (await tryItOut('post', '/v1/agents')).body;
    await tryItOut('post', '/v1/agents/{id}/versions', { id: agent.id });
    await tryItOut('get', '/v1/agents/{id}/versions', { id: agent.id });
    await tryItOut('get', '/v1/agents/{id}/versions/{version}', { id: agent.id, version: '2' });
    await tryItOut('delete', '/v1/agents/{id}', { id: agent.id });

    // Sessions: each "Create session" is a new session (never a replay of the previous one).
    const s1 = (await tryItOut('post', '/v1/sessions')).body;
    const s2 = (await tryItOut('post', '/v1/sessions', {}, { example: 'assistant' })).body;
    const s3 = (await tryItOut('post', '/v1/sessions')).body;
    expect(new Set([s1.id, s2.id, s3.id]).size).toBe(3);
    await tryItOut('get', '/v1/sessions');
    await tryItOut('get', '/v1/sessions/{id}', { id: s1.id });
    await tryItOut('post', '/v1/sessions/{id}', { id: s1.id });

    // A webhook endpoint before the runs, so that its delivery log has entries further down.
    const wh = (await tryItOut('post', '/v1/webhooks')).body;
    expect(wh.secret).toMatch(/^whsec_/);

    // A run that waits for an approval: events, approvals, approve.
    const r1 = (await tryItOut('post', '/v1/sessions/{id}/runs', { id: s1.id }, { example: 'order' })).body;
    expect(r1.status).toBe('queued');
    await until(r1.run_id, (r) => r.status === 'waiting_for_approval');
    await tryItOut('get', '/v1/runs/{id}', { id: r1.run_id });
    await tryItOut('get', '/v1/inputs/{id}', { id: r1.receipt.id });
    await tryItOut('get', '/v1/sessions/{id}/runs', { id: s1.id });
    {
      // A session with a subagent (CONTRACT 16): its list is not empty.
      expect((await t.call(KEYS.adminA, 'POST', '/v1/agents', { id: 'docs_lead', tools: [], subagents: { enabled: true } })).status).toBe(201);
      const lead = (await t.call(KEYS.adminA, 'POST', '/v1/sessions', { agent_id: 'docs_lead' })).body;
      const spawn = `!script ${JSON.stringify([{ tool_calls: [{ name: 'create_subagent', arguments: { name: 'c', instructions: 'hi' } }] }, { text: 'ok' }])}`;
      const r = await t.call(KEYS.adminA, 'POST', `/v1/sessions/${lead.id}/runs`, { input: { role: 'user', content: [{ type: 'text', text: spawn }] } }, { 'idempotency-key': 'docs-subagent' });
      for (const end = Date.now() + 20_000; (await runOf(r.body.run_id)).status !== 'completed'; ) {
        if (Date.now() > end) throw new Error('the subagent run did not complete');
        await new Promise((res) => setTimeout(res, 50));
      }
      const children = (await tryItOut('get', '/v1/sessions/{id}/subagents', { id: lead.id })).body;
      // The same subagent on the OpenAI surface: sessions.subagents, its turns and items.
      const sub = { id: lead.id, subagentId: children.data[0].id };
      await tryItOut('get', '/openai/v1/agents/sessions/{id}/subagents', { id: lead.id });
      await tryItOut('get', '/openai/v1/agents/sessions/{id}/subagents/{subagentId}', sub);
      const subTurns = (await tryItOut('get', '/openai/v1/agents/sessions/{id}/subagents/{subagentId}/turns', sub)).body;
      await tryItOut('get', '/openai/v1/agents/sessions/{id}/subagents/{subagentId}/turns/{turnId}', { ...sub, turnId: subTurns.data[0].id });
      await tryItOut('get', '/openai/v1/agents/sessions/{id}/subagents/{subagentId}/turns/{turnId}/items', { ...sub, turnId: subTurns.data[0].id });
      await tryItOut('get', '/openai/v1/agents/sessions/{id}/subagents/{subagentId}/items', sub);
    }
    await tryItOut('get', '/v1/runs/{id}/events', { id: r1.run_id });
    await tryItOut('get', '/v1/sessions/{id}/events', { id: s1.id });
    const approvals = (await tryItOut('get', '/v1/runs/{id}/approvals', { id: r1.run_id })).body;
    await tryItOut('post', '/v1/runs/{id}/approvals/{approval_id}', { id: r1.run_id, approval_id: approvals.data[0].id }, { example: 'approve' });
    expect((await until(r1.run_id, terminal)).status).toBe('completed');
    await tryItOut('get', '/v1/sessions/{id}/messages', { id: s1.id });
    await tryItOut('get', '/v1/sessions/{id}/messages/{message_id}', { id: s1.id, message_id: r1.user_message_id });

    // Client tools: the client_tool example waits for the tool_outputs examples.
    for (const output of ['output', 'error']) {
      const r = (await tryItOut('post', '/v1/sessions/{id}/runs', { id: s1.id }, { example: 'client_tool' })).body;
      await until(r.run_id, (x) => x.status === 'waiting_for_tool');
      await tryItOut('post', '/v1/runs/{id}/tool_outputs', { id: r.run_id }, { example: output });
      expect((await until(r.run_id, terminal)).status).toBe('completed');
    }

    // Callbacks (CONTRACT 17): an http tool that answers 202 {"callback": true}; its result by the callback examples (admin key).
    const later = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(202, { 'content-type': 'application/json' });
        res.end('{"callback":true}');
      });
    });
    await new Promise<void>((r) => later.listen(0, '127.0.0.1', () => r()));
    try {
      const url = `http://127.0.0.1:${(later.address() as AddressInfo).port}/ship`;
      const created = await t.call(KEYS.adminA, 'POST', '/v1/agents', {
        id: 'callback_docs_agent',
        description: 'Ships later.',
        instructions: 'Ship.',
        tools: [{ type: 'http', name: 'ship', description: 'Ships; answers by callback.', parameters: { type: 'object' }, url }],
      });
      expect(created.status).toBe(201);
      const cs = await t.call(KEYS.adminA, 'POST', '/v1/sessions', { agent_id: 'callback_docs_agent' });
      for (const example of ['output', 'error']) {
        const script = `!script ${JSON.stringify([{ tool_calls: [{ id: `call_docs_${example}`, name: 'ship', arguments: {} }] }, { text: 'done' }])}`;
        const r = await t.call(KEYS.adminA, 'POST', `/v1/sessions/${cs.body.id}/runs`, { input: { role: 'user', content: [{ type: 'text', text: script }] } }, { 'idempotency-key': `docs-cb-${example}` });
        await until(r.body.run_id, (x) => x.status === 'waiting_for_callback');
        await tryItOut('post', '/v1/runs/{id}/callbacks/{tool_call_id}', { id: r.body.run_id, tool_call_id: `call_docs_${example}` }, { example });
        expect((await until(r.body.run_id, terminal)).status).toBe('completed');
      }
    } finally {
      await new Promise<void>((r) => later.close(() => r()));
    }

    // Sync mode answers with the finished run.
    const sync = await tryItOut('post', '/v1/sessions/{id}/runs', { id: s1.id }, { example: 'sync' });
    expect(sync.status).toBe(200);
    expect(sync.body.status).toBe('completed');

    // Reject, then cancel a waiting run.
    const r4 = (await tryItOut('post', '/v1/sessions/{id}/runs', { id: s1.id }, { example: 'order' })).body;
    await until(r4.run_id, (r) => r.status === 'waiting_for_approval');
    const a4 = (await t.call(KEYS.adminA, 'GET', `/v1/runs/${r4.run_id}/approvals`)).body;
    await tryItOut('post', '/v1/runs/{id}/approvals/{approval_id}', { id: r4.run_id, approval_id: a4.data[0].id }, { example: 'reject' });
    await until(r4.run_id, terminal);
    const r5 = (await tryItOut('post', '/v1/sessions/{id}/runs', { id: s1.id }, { example: 'order' })).body;
    await until(r5.run_id, (r) => r.status === 'waiting_for_approval');
    expect((await tryItOut('post', '/v1/runs/{id}/cancel', { id: r5.run_id })).body.status).toBe('cancelled');

    // Attachments: the file is the user's to choose (Swagger UI shows a file picker).
    const form = new FormData();
    form.append('file', new Blob(['hello from the docs\n'], { type: 'text/plain' }), 'hello.txt');
    const att = (await tryItOut('post', '/v1/attachments', {}, { form })).body;
    for (const end = Date.now() + 20_000; ; ) {
      const a = (await tryItOut('get', '/v1/attachments/{id}', { id: att.id })).body;
      if (a.status === 'ready') break;
      if (a.status === 'rejected' || Date.now() > end) throw new Error(`attachment is ${a.status}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    await tryItOut('get', '/v1/attachments/{id}/content', { id: att.id });
    await tryItOut('delete', '/v1/attachments/{id}', { id: att.id });

    await tryItOut('get', '/v1/webhooks');
    await tryItOut('get', '/v1/webhooks/{id}', { id: wh.id });
    await tryItOut('get', '/v1/webhooks/{id}/deliveries', { id: wh.id });
    await tryItOut('post', '/v1/webhooks/{id}', { id: wh.id });
    await tryItOut('post', '/v1/webhooks/{id}/rotate_secret', { id: wh.id });
    await tryItOut('delete', '/v1/webhooks/{id}', { id: wh.id });

    // Secrets: the name parameter's example, as the page pre-fills it.
    const secret = (await tryItOut('put', '/v1/secrets/{name}')).body;
    expect(secret).toMatchObject({ object: 'secret', name: 'CRM_API_TOKEN', version: 1 });
    await tryItOut('get', '/v1/secrets');
    await tryItOut('get', '/v1/secrets/{name}');
    await tryItOut('delete', '/v1/secrets/{name}');

    await tryItOut('get', '/v1/admin/audit');
    await tryItOut('get', '/v1/admin/audit/verify');
    // The auditor's routes: the signing keys, the chain's state, an export (ndjson lines), legal hold.
    expect((await tryItOut('get', '/v1/admin/audit/public-key')).body.data.length).toBeGreaterThan(0);
    await tryItOut('get', '/v1/admin/audit/status');
    const exported = String((await tryItOut('get', '/v1/admin/audit/export')).body).trim().split('\n').map((l) => JSON.parse(l));
    expect(exported[0]).toMatchObject({ kind: 'header' });
    expect(exported[exported.length - 1]).toMatchObject({ kind: 'end' });
    await tryItOut('put', '/v1/admin/audit/legal_hold');
    await tryItOut('get', '/v1/admin/audit/legal_hold');

    // Models and money: the registry, the usage so far, a spend limit well above it.
    expect((await tryItOut('get', '/v1/models')).body.data[0]).toMatchObject({ id: 'scripted', price: { currency: 'USD' } });
    expect((await tryItOut('get', '/v1/admin/usage')).body.data.length).toBeGreaterThan(0);
    expect((await tryItOut('put', '/v1/admin/spend_limit')).body).toMatchObject({ limit: { amount: '50', currency: 'USD' }, window: 'month' });
    await tryItOut('get', '/v1/admin/spend_limit');
    await tryItOut('delete', '/v1/admin/spend_limit');

    // AG-UI: the example streams a whole run (SSE) and ends with RUN_FINISHED.
    const agUi = await tryItOut('post', '/ag-ui/agents/{agent_id}');
    expect(String(agUi.body)).toContain('"type":"RUN_FINISHED"');

    // The OpenAI Agents API (beta) surface (its own tag; the SSE stream is documented in the tag).
    await tryItOut('get', '/openai/v1/agents');
    await tryItOut('get', '/openai/v1/agents/{id}', { id: 'support_agent' });
    const o1 = (await tryItOut('post', '/openai/v1/agents/sessions')).body;
    const inline = (await tryItOut('post', '/openai/v1/agents/sessions', {}, { example: 'inline_agent' })).body;
    expect(inline.agent).toMatchObject({ name: null, model: 'scripted', tools: [expect.objectContaining({ type: 'function', name: 'confirm_with_user' })] });
    await tryItOut('get', '/openai/v1/agents/sessions');
    await tryItOut('get', '/openai/v1/agents/sessions/{id}', { id: o1.id });
    await tryItOut('post', '/openai/v1/agents/sessions/{id}', { id: o1.id });
    await tryItOut('post', '/openai/v1/agents/sessions/{id}/events', { id: o1.id });
    for (const end = Date.now() + 20_000; ; ) {
      if ((await t.call(KEYS.adminA, 'GET', `/openai/v1/agents/sessions/${o1.id}`)).body.status === 'idle') break;
      if (Date.now() > end) throw new Error('the OpenAI session did not become idle');
      await new Promise((r) => setTimeout(r, 50));
    }
    const turns = (await tryItOut('get', '/openai/v1/agents/sessions/{id}/turns', { id: o1.id })).body;
    await tryItOut('get', '/openai/v1/agents/sessions/{id}/turns/{turnId}', { id: o1.id, turnId: turns.data[0].id });
    await tryItOut('get', '/openai/v1/agents/sessions/{id}/turns/{turnId}/items', { id: o1.id, turnId: turns.data[0].id });
    await tryItOut('get', '/openai/v1/agents/sessions/{id}/items', { id: o1.id });
    await tryItOut('delete', '/openai/v1/agents/sessions/{id}', { id: o1.id });

    // Automations: a cron one into new sessions (run now, pause, resume, update, invocations, delete) and a one-time one.
    const auto = (await tryItOut('post', '/v1/automations')).body;
    expect(auto).toMatchObject({ object: 'automation', status: 'active' });
    await tryItOut('post', '/v1/automations', {}, { example: 'once' });
    await tryItOut('get', '/v1/automations');
    await tryItOut('get', '/v1/automations/{id}', { id: auto.id });
    await tryItOut('post', '/v1/automations/{id}', { id: auto.id });
    await tryItOut('post', '/v1/automations/{id}/pause', { id: auto.id });
    await tryItOut('post', '/v1/automations/{id}/resume', { id: auto.id });
    await tryItOut('post', '/v1/automations/{id}/invocations', { id: auto.id });
    await tryItOut('get', '/v1/automations/{id}/invocations', { id: auto.id });
    await tryItOut('delete', '/v1/automations/{id}', { id: auto.id });
    const oAuto = (await tryItOut('post', '/openai/v1/agents/automations')).body;
    expect(oAuto).toMatchObject({ object: 'agent.automation', type: 'periodic' });
    await tryItOut('get', '/openai/v1/agents/automations');
    await tryItOut('get', '/openai/v1/agents/automations/{id}', { id: oAuto.id });
    await tryItOut('post', '/openai/v1/agents/automations/{id}', { id: oAuto.id });
    await tryItOut('post', '/openai/v1/agents/automations/{id}/pause', { id: oAuto.id });
    await tryItOut('post', '/openai/v1/agents/automations/{id}/resume', { id: oAuto.id });
    const oInv = (await tryItOut('post', '/openai/v1/agents/automations/{id}/invocations', { id: oAuto.id })).body;
    await tryItOut('get', '/openai/v1/agents/automations/{id}/invocations', { id: oAuto.id });
    await tryItOut('get', '/openai/v1/agents/automations/{id}/invocations/{invocationId}', { id: oAuto.id, invocationId: oInv.id });
    await tryItOut('delete', '/openai/v1/agents/automations/{id}', { id: oAuto.id });

    await tryItOut('post', '/v1/sessions/{id}/archive', { id: s2.id });
    await tryItOut('delete', '/v1/sessions/{id}', { id: s2.id });

    // Nothing documented was left out, and every named body example was sent.
    const documented = Object.entries(doc.paths as Record<string, Record<string, Json>>).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`));
    expect(documented.filter((o) => !sent.has(o))).toEqual([]);
    const named = Object.entries(doc.paths as Record<string, Record<string, Json>>).flatMap(([path, ops]) =>
      Object.entries(ops).flatMap(([m, op]) => Object.keys(op.requestBody?.content?.['application/json']?.examples ?? {}).map((n) => `${m} ${path} ${n}`)),
    );
    expect(named.filter((n) => !examplesSent.has(n))).toEqual([]);
  }, 120_000);

  it('the page pre-fills Idempotency-Key, sends a fresh UUID instead of it (or of an empty field) each time, and keeps a key the user typed', () => {
    const op = doc.paths['/v1/sessions/{id}/runs'].post;
    const param = op.parameters.find((p: Json) => p.name === 'Idempotency-Key');
    expect(param.required).toBe(true);
    expect(param.example ?? param.schema.example).toBeUndefined();
    const prefilled = parameterMacro(op, param) as string;
    expect(prefilled).toMatch(/^[0-9a-f-]{36}$/);
    expect(parameterMacro(op, param)).not.toBe(prefilled);
    // Other parameters keep their defaults.
    expect(parameterMacro(op, { name: 'limit', in: 'query', default: 7 })).toBe(7);
    const sent1 = interceptor({ url: 'x', method: 'POST', headers: { 'Idempotency-Key': prefilled } }).headers['Idempotency-Key'];
    const sent2 = interceptor({ url: 'x', method: 'POST', headers: { 'Idempotency-Key': prefilled } }).headers['Idempotency-Key'];
    expect(new Set([prefilled, sent1, sent2]).size).toBe(3);
    const a = interceptor({ url: 'x', method: 'POST', headers: {} });
    const b = interceptor({ url: 'x', method: 'POST', headers: { 'Idempotency-Key': '' } });
    expect(a.headers['Idempotency-Key']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(b.headers['Idempotency-Key']).toMatch(/^[0-9a-f-]{36}$/);
    expect(b.headers['Idempotency-Key']).not.toBe(a.headers['Idempotency-Key']);
    expect(interceptor({ url: 'x', method: 'POST', headers: { 'idempotency-key': 'mine-1' } }).headers).toEqual({ 'idempotency-key': 'mine-1' });
    expect(interceptor({ url: 'x', method: 'GET', headers: {} }).headers).toEqual({});
  });
});
