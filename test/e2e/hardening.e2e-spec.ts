import { createServer, request as httpRequest, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';
import { createSession, isTerminal, runEvents, script, startRun, userInput, waitForRun } from '../helpers/runs';

/**
 * Issue #14, part C: requests that used to answer 500 `internal_error` (retryable, so clients
 * retried them), model output that failed its run, audit records that were never written, and
 * the smaller leaks. Each test failed on the code before the fix.
 */

async function raw(t: TestApp, method: string, path: string, body: string | undefined, headers: Record<string, string> = {}) {
  const res = await fetch(t.url + path, {
    method,
    headers: { authorization: `Bearer ${KEYS.adminA}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    body,
  });
  const text = await res.text();
  let parsed: any;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, text, body: parsed };
}

/** A fake OpenAI-compatible endpoint that misbehaves: lone surrogates in text and in tool-call arguments. */
function fakeOpenAi(): Promise<{ server: Server; baseUrl: string }> {
  const sse = (res: ServerResponse, text: string) => res.write(`data: ${text}\n\n`);
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString('utf8')));
    req.on('end', () => {
      const sent = JSON.parse(body) as { messages: Array<{ role: string; content: unknown }> };
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (JSON.stringify(sent.messages).includes('crash the client')) {
        // Not a shape the client expects: its parsing throws a TypeError.
        sse(res, '{"choices":5}');
      } else if (!sent.messages.some((m) => m.role === 'tool')) {
        // Written as JSON text by hand: JSON.stringify would never produce these escapes.
        sse(res, String.raw`{"choices":[{"index":0,"delta":{"content":"bad \ud800 char, split \ud83d"},"finish_reason":null}]}`);
        sse(res, String.raw`{"choices":[{"index":0,"delta":{"content":"\ude00 emoji"},"finish_reason":null}]}`);
        sse(res, String.raw`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_s1","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Par\\udc00is\"}"}}]},"finish_reason":null}]}`);
        sse(res, '{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}');
      } else {
        sse(res, String.raw`{"choices":[{"index":0,"delta":{"content":"done \udfff"},"finish_reason":"stop"}]}`);
      }
      sse(res, '[DONE]');
      res.end();
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/` })),
  );
}

describe('hardening (#14 part C)', () => {
  let t: TestApp;
  let openai: { server: Server; baseUrl: string };
  beforeAll(async () => {
    openai = await fakeOpenAi();
    t = await startTestApp({ OPENAI_BASE_URL: openai.baseUrl, OPENAI_API_KEY: 'sk-test', OPENAI_MODEL: 'gpt-fake' });
  }, 120_000); // a loaded machine starts the embedded database slowly
  afterAll(async () => {
    await t?.close();
    openai.server.closeAllConnections();
    await new Promise((r) => openai.server.close(r));
  });

  async function auditOf(requestId: string): Promise<any> {
    const res = await t.call(KEYS.adminA, 'GET', '/v1/admin/audit?limit=100');
    expect(res.status).toBe(200);
    return res.body.data.find((r: any) => r.request_id === requestId);
  }

  describe('item 3: deterministic 500s', () => {
    it('a malformed path id (U+0000, an emoji, a stray quote) is its resource 404, on every kind of route', async () => {
      const sid = await createSession(t, KEYS.adminA);
      const cases: Array<[string, string, string]> = [
        ['GET', '/v1/sessions/sess_%00abc', 'session_not_found'],
        ['POST', '/v1/sessions/sess_%00abc/archive', 'session_not_found'],
        ['DELETE', '/v1/sessions/sess_%00abc', 'session_not_found'],
        // (`%ED%A0%80`, a lone surrogate percent-encoded, is not valid UTF-8: Fastify refuses the URL
        // itself with FST_ERR_BAD_URL, a framework error of item 6.)
        ['GET', '/v1/sessions/sess_%F0%9F%98%80', 'session_not_found'],
        ['GET', `/v1/sessions/${sid}/messages/msg_%00`, 'message_not_found'],
        ['GET', '/v1/runs/run_%00x', 'run_not_found'],
        ['GET', '/v1/runs/run_%00x/events', 'run_not_found'],
        ['POST', '/v1/runs/run_%00x/cancel', 'run_not_found'],
        ['GET', '/v1/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV/approvals', 'run_not_found'],
        ['POST', '/v1/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV/approvals/apr_%00', 'approval_not_found'],
        ['GET', '/v1/attachments/att_%00', 'attachment_not_found'],
        ['GET', '/v1/agents/%00', 'agent_not_found'],
        ['GET', "/v1/sessions/sess_'%20OR%201=1", 'session_not_found'],
      ];
      for (const [method, path, code] of cases) {
        const res = await raw(t, method, path, method === 'POST' ? '{}' : undefined);
        expect({ path, status: res.status, code: res.body?.error?.code }).toEqual({ path, status: 404, code });
        expect(res.body.error.retryable).toBe(false);
        expect(res.headers.get('x-request-id')).toBe(res.body.error.request_id);
      }
      // Authentication still comes first.
      expect((await raw(t, 'GET', '/v1/sessions/sess_%00abc', undefined, { authorization: 'Bearer nope-nope-nope' })).status).toBe(401);
      // The same answer as a well-formed id that does not exist.
      const missing = await raw(t, 'GET', '/v1/sessions/sess_01ARZ3NDEKTSV4RRFFQ69G5FAV', undefined);
      expect(missing.body.error).toMatchObject({ code: 'session_not_found', message: 'session not found' });
    });

    it('JSON nested thousands deep is 400 before it is parsed, in known and unknown fields alike', async () => {
      const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
      const sid = await createSession(t, KEYS.adminA);
      for (const [path, body] of [
        ['/v1/sessions', `{"title":"x","zz":${deep(5000)}}`],
        ['/v1/sessions', `{"metadata":${'{"a":'.repeat(2000)}1${'}'.repeat(2000)}}`],
        [`/v1/sessions/${sid}/runs`, `{"input":{"role":"user","content":${deep(3000)}}}`],
      ]) {
        const res = await raw(t, 'POST', path, body, { 'idempotency-key': `deep-${Math.random()}` });
        expect(res.status).toBe(400);
        expect(res.body.error).toMatchObject({ code: 'invalid_request', retryable: false, details: { errors: [{ field: 'body', message: 'nests deeper than 64 levels' }] } });
      }
      // 64 levels are fine (here in a client tool output, which is free-form JSON).
      const ok = await raw(t, 'POST', '/v1/sessions', JSON.stringify({ title: 'shallow enough' }));
      expect(ok.status).toBe(201);
    });

    it('a lone UTF-16 surrogate in any stored string is 400 invalid_request naming the field', async () => {
      const sid = await createSession(t, KEYS.adminA);
      const cases: Array<[string, string, string]> = [
        ['/v1/sessions', String.raw`{"metadata":{"a":"\ud800"}}`, 'metadata.a'],
        ['/v1/sessions', String.raw`{"title":"x\udc00y"}`, 'title'],
        [`/v1/sessions/${sid}`, String.raw`{"metadata":{"k\ud800":"v"}}`, 'metadata.k\ud800'],
        [`/v1/sessions/${sid}/runs`, String.raw`{"input":{"role":"user","content":[{"type":"text","text":"hi \ud800"}]}}`, 'input.content[0].text'],
        [`/v1/sessions/${sid}/runs`, String.raw`{"input":{"role":"user","content":[{"type":"text","text":"hi"}]},"metadata":{"m":"\udbff"}}`, 'metadata.m'],
        ['/v1/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV/tool_outputs', String.raw`{"tool_outputs":[{"tool_call_id":"call_1","output":{"x":["\ud800"]}}]}`, 'tool_outputs[0].output.x[0]'],
        ['/v1/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV/approvals/apr_01ARZ3NDEKTSV4RRFFQ69G5FAV', String.raw`{"decision":"reject","reason":"\ud800"}`, 'reason'],
      ];
      for (const [path, body, field] of cases) {
        const res = await raw(t, 'POST', path, body, { 'idempotency-key': `sur-${Math.random()}` });
        expect({ path, status: res.status }).toEqual({ path, status: 400 });
        expect(res.body.error.details.errors).toEqual([{ field, message: 'must not contain a lone UTF-16 surrogate' }]);
      }
      // A valid pair is text like any other, stored and returned exactly.
      const emoji = await raw(t, 'POST', '/v1/sessions', String.raw`{"title":"ok \ud83d\ude00"}`);
      expect(emoji.status).toBe(201);
      expect(emoji.body.title).toBe('ok 😀');
    });

    it('expected_revision beyond the integer range and input of the wrong shape are 400', async () => {
      const sid = await createSession(t, KEYS.adminA);
      const input = userInput('hi');
      const cases: Array<[string, Record<string, unknown>, string]> = [
        [`/v1/sessions/${sid}/runs`, { input, expected_revision: 2 ** 31 }, 'expected_revision'],
        [`/v1/sessions/${sid}/runs`, { input, expected_revision: 1e300 }, 'expected_revision'],
        [`/v1/sessions/${sid}`, { title: 'x', expected_revision: 2 ** 31 }, 'expected_revision'],
        [`/v1/sessions/${sid}/archive`, { expected_revision: 2 ** 40 }, 'expected_revision'],
        [`/v1/sessions/${sid}/runs`, { input: [] }, 'input'],
        [`/v1/sessions/${sid}/runs`, { input: 'hello' }, 'input'],
        [`/v1/sessions/${sid}/runs`, { input: { role: 'user', content: [[]] } }, 'input.content'],
        [`/v1/sessions/${sid}/runs`, { input, limits: [] }, 'limits'],
        [`/v1/sessions/${sid}/runs`, { input, limits: { max_total_tokens: 2 ** 60 } }, 'limits.max_total_tokens'],
        ['/v1/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV/tool_outputs', { tool_outputs: [[]] }, 'tool_outputs'],
        ['/v1/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV/tool_outputs', { tool_outputs: [{ tool_call_id: 'call_1', error: [] }] }, 'tool_outputs[0].error'],
      ];
      for (const [path, body, field] of cases) {
        const res = await t.call(KEYS.adminA, 'POST', path, body, { 'idempotency-key': `shape-${Math.random()}` });
        expect({ path, body, status: res.status }).toEqual({ path, body, status: 400 });
        expect(res.body.error.code).toBe('invalid_request');
        expect(res.body.error.details.errors.map((e: any) => e.field)).toContain(field);
      }
      const revision = (await t.call(KEYS.adminA, 'GET', `/v1/sessions/${sid}`)).body.revision;
      const fine = await startRun(t, KEYS.adminA, sid, { input, expected_revision: revision });
      expect(fine.status).toBe(202);
    });
  });

  describe('item 4: unsafe text from a model', () => {
    it('the scripted model: a lone surrogate in a reply or in tool-call arguments is U+FFFD, the run completes', async () => {
      const sid = await createSession(t, KEYS.adminA, { agent_id: 'assistant' });
      const text = '!script [{"text":"bad \\ud800 char","tool_calls":[{"name":"calculator","arguments":{"expression":"1+1","note":"\\udc00"}}]},{"text":"after \\ud83d\\ude00 tool"}]';
      const r = await startRun(t, KEYS.adminA, sid, { input: userInput(text) });
      expect(r.status).toBe(202);
      const run = await waitForRun(t, KEYS.adminA, r.body.run_id, isTerminal);
      expect(run).toMatchObject({ status: 'completed', error: null });
      const msgs = await t.call(KEYS.adminA, 'GET', `/v1/sessions/${sid}/messages?limit=100`);
      const assistant = msgs.body.data.filter((m: any) => m.role === 'assistant');
      expect(assistant[0].content[0]).toEqual({ type: 'text', text: 'bad \uFFFD char' });
      expect(assistant[0].content[1]).toMatchObject({ type: 'tool_call', arguments: { expression: '1+1', note: '\uFFFD' } });
      expect(assistant[1].content).toEqual([{ type: 'text', text: 'after 😀 tool' }]);
      const events = await runEvents(t, KEYS.adminA, run.id);
      const deltas = events.filter((e) => e.type === 'message.delta' && e.data.message_id === assistant[0].id).map((e) => e.data.delta);
      expect(deltas.join('')).toBe('bad \uFFFD char');
    });

    it('an OpenAI-compatible endpoint: lone surrogates in deltas and arguments are U+FFFD, a pair split between deltas stays whole', async () => {
      const sid = await createSession(t, KEYS.adminA, { agent_id: 'assistant' });
      const r = await startRun(t, KEYS.adminA, sid, { input: userInput('weather please'), model: 'gpt-fake' });
      expect(r.status).toBe(202);
      const run = await waitForRun(t, KEYS.adminA, r.body.run_id, isTerminal);
      expect(run).toMatchObject({ status: 'completed', error: null });
      const msgs = await t.call(KEYS.adminA, 'GET', `/v1/sessions/${sid}/messages?limit=100`);
      const assistant = msgs.body.data.filter((m: any) => m.role === 'assistant');
      expect(assistant[0].content[0]).toEqual({ type: 'text', text: 'bad \uFFFD char, split 😀 emoji' });
      expect(assistant[0].content[1]).toMatchObject({ type: 'tool_call', tool_name: 'get_weather', arguments: { location: 'Par\uFFFDis' } });
      expect(assistant[1].content).toEqual([{ type: 'text', text: 'done \uFFFD' }]);
      const events = await runEvents(t, KEYS.adminA, run.id);
      const deltas = events.filter((e) => e.type === 'message.delta' && e.data.message_id === assistant[0].id).map((e) => e.data.delta);
      expect(deltas.join('')).toBe('bad \uFFFD char, split 😀 emoji');
    });
  });

  describe('item 7: rejected requests are audited', () => {
    it('U+0000 in the path, deep nesting, malformed JSON and a wrong content type each leave their audit record', async () => {
      const cases: Array<[string, string, string | undefined, Record<string, string>, string]> = [
        ['audit-nul-path', '/v1/sessions/sess_%00abc/archive', '{}', {}, 'session_not_found'],
        ['audit-deep', '/v1/sessions', `{"zz":${'['.repeat(4000)}${']'.repeat(4000)}}`, {}, 'invalid_request'],
        ['audit-malformed', '/v1/sessions', '{"title":', {}, 'invalid_request'],
        ['audit-surrogate', '/v1/sessions', String.raw`{"title":"\ud800"}`, {}, 'invalid_request'],
        ['audit-media-type', '/v1/sessions', 'title=x', { 'content-type': 'text/plain' }, 'unsupported_media_type'],
      ];
      for (const [requestId, path, body, headers, code] of cases) {
        const res = await raw(t, 'POST', path, body, { 'x-request-id': requestId, ...headers });
        expect(res.body.error.code).toBe(code);
      }
      for (const [requestId, , , , code] of cases) {
        const record = await auditOf(requestId);
        expect({ requestId, outcome: record?.outcome }).toEqual({ requestId, outcome: code });
        expect(record).toMatchObject({ actor_subject_id: 'admin_a', tenant_id: 'tenant_a' });
      }
      const nul = await auditOf('audit-nul-path');
      expect(nul).toMatchObject({ action: 'POST /v1/sessions/:id/archive', resource_type: 'session', resource_id: 'sess_\uFFFDabc' });
      expect(nul.data.request.url).toBe('/v1/sessions/sess_%00abc/archive');
      // Unknown keys have no tenant to record under: not recorded (as before).
      await raw(t, 'POST', '/v1/sessions', '{"title":', { authorization: 'Bearer not-a-known-key', 'x-request-id': 'audit-unknown-key' });
      expect(await auditOf('audit-unknown-key')).toBeUndefined();
      const verify = await t.call(KEYS.adminA, 'GET', '/v1/admin/audit/verify');
      expect(verify.body).toMatchObject({ ok: true });
    });
  });

  describe('item 8: smaller', () => {
    it('an empty Idempotency-Key is 400 invalid_request, on routes that require a key and on others', async () => {
      const sid = await createSession(t, KEYS.adminA);
      const required = await t.call(KEYS.adminA, 'POST', `/v1/sessions/${sid}/runs`, { input: userInput('hi') }, { 'idempotency-key': '' });
      const optional = await t.call(KEYS.adminA, 'POST', '/v1/sessions', {}, { 'idempotency-key': '' });
      for (const res of [required, optional]) {
        expect(res.status).toBe(400);
        expect(res.body.error).toMatchObject({ code: 'invalid_request', details: { errors: [{ field: 'Idempotency-Key', message: 'must be 1..255 printable ASCII characters' }] } });
      }
      const form = new FormData();
      form.append('file', new Blob([Buffer.from('hello')]), 'a.txt');
      const upload = await fetch(`${t.url}/v1/attachments`, { method: 'POST', headers: { authorization: `Bearer ${KEYS.adminA}`, 'idempotency-key': '' }, body: form });
      expect(upload.status).toBe(400);
      expect(((await upload.json()) as any).error.code).toBe('invalid_request');
      // Missing stays idempotency_key_required.
      const missing = await t.call(KEYS.adminA, 'POST', `/v1/sessions/${sid}/runs`, { input: userInput('hi') });
      expect(missing.body.error.code).toBe('idempotency_key_required');
    });

    it('agent: [] on a session update is 400', async () => {
      const sid = await createSession(t, KEYS.adminA);
      for (const agent of [[], 'scripted', 5]) {
        const res = await t.call(KEYS.adminA, 'POST', `/v1/sessions/${sid}`, { agent });
        expect(res.status).toBe(400);
        expect(res.body.error.details.errors[0].field).toBe('agent');
      }
    });

    it('limit takes plain decimal 1..100 only', async () => {
      for (const limit of ['0x10', '%205', '5%20', '1e1', '%2B5', '5.0', '0', '101', '-1', '']) {
        const res = await t.call(KEYS.adminA, 'GET', `/v1/sessions?limit=${limit}`);
        expect({ limit, status: res.status }).toEqual({ limit, status: 400 });
        expect(res.body.error.details.errors[0].field).toBe('limit');
      }
      for (const path of ['/v1/sessions?limit=1&limit=2', '/v1/admin/audit?limit=0x10', '/v1/runs/run_01ARZ3NDEKTSV4RRFFQ69G5FAV/events?limit=0x10']) {
        const res = await t.call(KEYS.adminA, 'GET', path);
        // (the query is validated before the handler looks for the run)
        expect({ path, status: res.status }).toEqual({ path, status: 400 });
      }
      expect((await t.call(KEYS.adminA, 'GET', '/v1/sessions?limit=05')).status).toBe(200);
      expect((await t.call(KEYS.adminA, 'GET', '/v1/sessions?limit=100')).status).toBe(200);
    });

    it('run.error.message carries no internal exception text', async () => {
      // An endpoint whose chunks make the client throw (a TypeError): before, its text was the message.
      const sid = await createSession(t, KEYS.adminA, { agent_id: 'assistant' });
      const r = await startRun(t, KEYS.adminA, sid, { input: userInput('please crash the client'), model: 'gpt-fake' });
      const run = await waitForRun(t, KEYS.adminA, r.body.run_id, isTerminal);
      expect(run).toMatchObject({ status: 'failed', error: { code: 'model_error', message: 'the model call failed' } });
      const events = await runEvents(t, KEYS.adminA, run.id);
      expect(JSON.stringify(events)).not.toMatch(/TypeError|not iterable|Cannot read/);
    });

    it('a script nested deeper than the JSON limit is an invalid script, not a stack overflow', async () => {
      const sid = await createSession(t, KEYS.adminA, { agent_id: 'assistant' });
      const deepArgs = '{"a":'.repeat(20_000) + '1' + '}'.repeat(20_000);
      const r = await startRun(t, KEYS.adminA, sid, { input: userInput(`!script [{"tool_calls":[{"name":"calculator","arguments":${deepArgs}}]}]`) });
      expect(r.status).toBe(202);
      const run = await waitForRun(t, KEYS.adminA, r.body.run_id, isTerminal);
      expect(run.status).toBe('completed');
      const events = await runEvents(t, KEYS.adminA, run.id);
      expect(events.find((e) => e.type === 'message.completed').data.content).toEqual([
        { type: 'text', text: 'The script is invalid: the script nests deeper than 64 levels.' },
      ]);
      expect(JSON.stringify(events)).not.toMatch(/Maximum call stack|RangeError/);
    });

    it('a path-traversal attempt on /console is 404 not_found with the envelope', async () => {
      // node:http sends the path as written (fetch would normalise the dots away first).
      const get = (path: string) =>
        new Promise<{ status: number; requestId: string | undefined; body: any }>((resolve, reject) => {
          const req = httpRequest(`${t.url}${path}`, { path }, (res) => {
            let text = '';
            res.on('data', (d: Buffer) => (text += d.toString('utf8')));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, requestId: res.headers['x-request-id'] as string | undefined, body: text ? JSON.parse(text) : undefined }));
          });
          req.on('error', reject);
          req.end();
        });
      for (const path of ['/console/../../etc/passwd', '/console/%2e%2e/%2e%2e/etc/passwd', '/console/../package.json']) {
        const res = await get(path);
        expect({ path, status: res.status, code: res.body?.error?.code }).toEqual({ path, status: 404, code: 'not_found' });
        expect(res.requestId).toBe(res.body.error.request_id);
      }
      expect((await fetch(`${t.url}/console/`)).status).toBe(200);
    });

    it('a UTF-16 text file with a byte order mark is accepted as text/plain and given to the model as text', async () => {
      const content = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('Grüße aus UTF-16 😀\r\n', 'utf16le')]);
      const form = new FormData();
      form.append('file', new Blob([content]), 'notes.txt');
      const up = await fetch(`${t.url}/v1/attachments`, { method: 'POST', headers: { authorization: `Bearer ${KEYS.adminA}`, 'idempotency-key': `u16-${Date.now()}` }, body: form });
      expect(up.status).toBe(202);
      const id = ((await up.json()) as any).id;
      let a: any;
      for (let i = 0; i < 100; i++) {
        a = (await t.call(KEYS.adminA, 'GET', `/v1/attachments/${id}`)).body;
        if (a.status !== 'scanning' && a.status !== 'uploaded') break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(a).toMatchObject({ status: 'ready', media_type: 'text/plain', rejection_reason: null });
      const got = await fetch(`${t.url}/v1/attachments/${id}/content`, { headers: { authorization: `Bearer ${KEYS.adminA}` } });
      expect(Buffer.from(await got.arrayBuffer()).equals(content)).toBe(true);
      const sid = await createSession(t, KEYS.adminA, { agent_id: 'assistant' });
      const text = script([{ tool_calls: [{ name: 'read_attachment', arguments: { attachment_id: id } }] }, { text: 'read' }]);
      const r = await startRun(t, KEYS.adminA, sid, { input: userInput(text) });
      const run = await waitForRun(t, KEYS.adminA, r.body.run_id, isTerminal);
      expect(run.status).toBe('completed');
      const events = await runEvents(t, KEYS.adminA, run.id);
      const result = events.find((e) => e.type === 'tool.completed')?.data.result;
      expect(JSON.stringify(result)).toContain('Grüße aus UTF-16 😀');
    });
  });
});
