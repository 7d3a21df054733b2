import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, IncomingMessage } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, isInitializeRequest, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { FakeProviders, fakeModelEntry, startFakeProviders } from '../helpers/fake-model-providers';
import { createSession, isTerminal, script, startRun, userInput, waitForRun } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';
import { WebhookReceiver } from '../helpers/webhook-receiver';

/**
 * Issues 42 and 48: ONE scrubbing rule for every value that becomes a tool result or a tool error.
 * One tenant secret (rotated mid-run: both versions) goes out in a tool header and comes back on
 * every path - sync http (result, 4xx/5xx excerpts cut at 500 characters with the value straddling
 * the cut, a non-JSON body, JSON escapes, base64, URL encoding, Latin-1 mojibake), a callback, MCP
 * (a result split across two content parts, an `isError` text cut, a JSON-RPC error, `tools/list`),
 * a client tool output, an `ask_user` answer, an approval's reason, a subagent's final text and a
 * model's streamed answer split across chunks. Then no surface holds the raw value (or 8 or more
 * of its leading characters): events (JSON pages and SSE), messages, runs, the audit trail and
 * its JSONL/CSV export, webhook payloads, the OpenAI-compatible and AG-UI surfaces, and every
 * request the model server received.
 */

const rnd = () => Math.random().toString(36).slice(2, 10);
// '/' and '"' force JSON escapes, 'ä' and '€' UTF-8 (and Latin-1 mojibake).
const V1 = `crm-tök€n-${rnd()}/${rnd()}"${rnd()}`;
const V2 = `crm-rotated-${rnd()}-${rnd()}${rnd()}`;
const MASK = '[secret:CRM_TOKEN]';

/** The forms a careless tool echoes a value in. */
const formsOf = (v: string) => ({
  raw: v,
  b64: Buffer.from(v).toString('base64'),
  basic: Buffer.from(`user:${v}`).toString('base64'),
  url: encodeURIComponent(v),
  latin1: Buffer.from(v, 'utf8').toString('latin1'),
  escaped: JSON.stringify(v).slice(1, -1).replace(/\//g, '\\/'),
  unicode: Array.from(v)
    .map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
    .join(''),
});

/** The header value as the tool server received it (Node reads header bytes as Latin-1). */
const headerValue = (req: IncomingMessage, name: string) => Buffer.from(String(req.headers[name] ?? ''), 'latin1').toString('utf8');

async function startToolServer() {
  const callbacks: Array<{ token: string; url: string; bodyUrl: string; toolCallId: string; runId: string }> = [];
  const transports = new Map<string, StreamableHTTPServerTransport>();
  let mcpKey = '';
  const mcp = () => {
    const s = new Server({ name: 'leaky', version: '1.0.0' }, { capabilities: { tools: {} } });
    s.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [
        { name: 'split', description: `Returns parts. Key ${mcpKey.slice(0, 5)}${mcpKey.slice(5)}`, inputSchema: { type: 'object', properties: {} } },
        { name: 'fail', description: 'Fails', inputSchema: { type: 'object', properties: { pad: { type: 'number' } } } },
        { name: 'rpc', description: 'JSON-RPC error', inputSchema: { type: 'object', properties: {} } },
      ],
    }));
    s.setRequestHandler(CallToolRequestSchema, async (req) => {
      const k = mcpKey;
      const cut = Math.floor(k.length / 2);
      if (req.params.name === 'split') {
        return { content: [{ type: 'text', text: `first half ${k.slice(0, cut)}` }, { type: 'text', text: `${k.slice(cut)} second half` }] };
      }
      if (req.params.name === 'fail') {
        const pad = Number((req.params.arguments as { pad?: number })?.pad ?? 0);
        return { isError: true, content: [{ type: 'text', text: `${'E'.repeat(pad)}${k} and more text after it ${'z'.repeat(600)}` }] };
      }
      throw new McpError(ErrorCode.InvalidParams, `bad params for key ${k}`);
    });
    return s;
  };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://x');
    const key = headerValue(req, 'x-crm-key');
    const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (url.pathname === '/mcp') {
      mcpKey = key;
      const body = text ? JSON.parse(text) : undefined;
      const sid = req.headers['mcp-session-id'] as string | undefined;
      let transport = sid ? transports.get(sid) : undefined;
      if (!transport) {
        if (req.method !== 'POST' || !isInitializeRequest(body)) return void res.writeHead(400).end();
        transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), enableJsonResponse: true, onsessioninitialized: (id) => void transports.set(id, transport!) });
        await mcp().connect(transport);
      }
      return void (await transport.handleRequest(req, res, body));
    }
    const args = (text ? JSON.parse(text) : {}) as { arguments?: { pad?: number }; run_id?: string; tool_call_id?: string; callback_url?: string };
    const pad = Number(args.arguments?.pad ?? 0);
    switch (url.pathname) {
      case '/echo':
        // Every form at once, and the raw JSON text with the value escaped.
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(`{"forms":${JSON.stringify(formsOf(key))},"escaped":"${formsOf(key).unicode}","slashed":"${formsOf(key).escaped}"}`);
      case '/err':
        return void res.writeHead(pad % 2 ? 500 : 422, { 'content-type': 'text/plain' }).end(`${'E'.repeat(pad)}${key} tail ${'z'.repeat(700)}`);
      case '/text':
        return void res.writeHead(200, { 'content-type': 'text/plain' }).end(`not json: ${key}`);
      case '/cb':
        callbacks.push({ token: String(req.headers['callback-token']), url: String(req.headers['callback-url']), bodyUrl: String(args.callback_url), toolCallId: String(args.tool_call_id), runId: String(args.run_id) });
        return json(202, { callback: true });
      default:
        return void res.writeHead(404).end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    callbacks,
    close: async () => {
      for (const t of transports.values()) await t.close().catch(() => undefined);
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe('one scrubbing rule on every tool-result path (issues 42, 48)', () => {
  let t: TestApp;
  let tools: Awaited<ReturnType<typeof startToolServer>>;
  let fake: FakeProviders;
  const hooks = new WebhookReceiver();
  const admin = KEYS.adminA;
  const sessions: string[] = [];
  const runs: string[] = [];

  beforeAll(async () => {
    tools = await startToolServer();
    fake = await startFakeProviders();
    await hooks.start();
    const file = join(tmpdir(), `models-scrub-${Date.now()}.json`);
    writeFileSync(file, JSON.stringify([{ id: 'scripted', provider: 'scripted', model: 'scripted' }, fakeModelEntry('openai', fake)]));
    process.env.FAKE_MODEL_KEY = 'sk-fake';
    t = await startTestApp({ MODELS_FILE: file, OUTBOUND_URL_ALLOWLIST: 'http://127.0.0.1:*' });
    const hook = await t.call(admin, 'POST', '/v1/webhooks', { url: hooks.url, events: ['run.completed', 'run.requires_action', 'run.failed', 'audit.recorded'] });
    expect(hook.status).toBe(201);
    hooks.secret = hook.body.secret;
    expect((await t.call(admin, 'PUT', '/v1/secrets/CRM_TOKEN', { value: V1 })).status).toBe(200);
    const headers = { 'X-Crm-Key': '${secret:CRM_TOKEN}' };
    const http = (name: string, path: string, extra: Record<string, unknown> = {}) => ({
      type: 'http',
      name,
      parameters: { type: 'object', properties: { pad: { type: 'number' } } },
      url: `${tools.base}${path}`,
      headers,
      ...extra,
    });
    const child = await t.call(admin, 'POST', '/v1/agents', { id: 'leaky_child', model: 'fake-openai', tools: [http('echo_http', '/echo', { idempotent: true })] });
    if (child.status !== 201) throw new Error(child.text);
    const leaky = await t.call(admin, 'POST', '/v1/agents', {
      id: 'leaky',
      tools: [
        http('echo_http', '/echo', { idempotent: true }),
        http('err_http', '/err'),
        http('text_http', '/text'),
        http('cb_http', '/cb', { callback_timeout_ms: 60_000 }),
        http('risky_http', '/echo', { risk: 'approve' }),
        { type: 'mcp', server: 'm', url: `${tools.base}/mcp`, headers },
        { type: 'function', name: 'client_lookup', description: 'Looks a customer up on the client', parameters: { type: 'object' } },
        'ask_user',
      ],
      subagents: { enabled: true, agents: ['leaky_child'] },
    });
    if (leaky.status !== 201) throw new Error(leaky.text);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await tools?.close();
    await fake?.close();
    await hooks.stop();
  });

  const pads = [488, 489, 490, 491, 492, 493, 494, 495, 496, 497, 498, 499];

  it('a run that meets the value on every path shows [secret:CRM_TOKEN] instead, in every version', async () => {
    const sid = await createSession(t, admin, { agent_id: 'leaky' });
    sessions.push(sid);
    const turns = [
      {
        tool_calls: [
          { id: 'call_echo', name: 'echo_http', arguments: {} },
          ...pads.map((pad) => ({ id: `call_err_${pad}`, name: 'err_http', arguments: { pad } })),
          { id: 'call_text', name: 'text_http', arguments: {} },
          { id: 'call_split', name: 'm.split', arguments: {} },
          ...[495, 497, 499].map((pad) => ({ id: `call_mfail_${pad}`, name: 'm.fail', arguments: { pad } })),
          { id: 'call_rpc', name: 'm.rpc', arguments: {} },
        ],
      },
      { tool_calls: [{ id: 'call_cb', name: 'cb_http', arguments: {} }] },
      { tool_calls: [{ id: 'call_client', name: 'client_lookup', arguments: {} }] },
      { tool_calls: [{ id: 'call_risky', name: 'risky_http', arguments: {} }] },
      { tool_calls: [{ id: 'call_ask', name: 'ask_user', arguments: { question: 'Your key?' } }] },
      { tool_calls: [{ id: 'call_sub', name: 'create_subagent', arguments: { agent_id: 'leaky_child', name: 'c1', instructions: 'scenario:echo' } }] },
      { tool_calls: [{ id: 'call_wait', name: 'wait_for_subagents', arguments: {} }] },
      { text: 'All done.' },
    ];
    fake.echo.tool = 'echo_http';
    const r = await startRun(t, admin, sid, { input: userInput(script(turns)) });
    expect(r.status).toBe(202);
    const runId = r.body.run_id as string;
    runs.push(runId);

    // The callback tool got its token and the absolute callback URL (PUBLIC_BASE_URL's default).
    let run = await waitForRun(t, admin, runId, (x) => x.status === 'waiting_for_callback' || isTerminal(x));
    expect(run.status).toBe('waiting_for_callback');
    const cb = tools.callbacks.at(-1)!;
    expect(cb.url).toBe(`${t.url.replace('localhost', '127.0.0.1')}/v1/runs/${runId}/callbacks/call_cb`);
    expect(cb.bodyUrl).toBe(cb.url);
    // Rotated before the callback arrives: the echo carries the OLD version, masked all the same.
    expect((await t.call(admin, 'PUT', '/v1/secrets/CRM_TOKEN', { value: V2 })).status).toBe(200);
    const cbRes = await t.call(null, 'POST', `/v1/runs/${runId}/callbacks/call_cb`, { output: { echo: `I got ${V1}`, forms: formsOf(V1) } }, { 'callback-token': cb.token });
    expect(cbRes.status).toBe(200);

    run = await waitForRun(t, admin, runId, (x) => x.status === 'waiting_for_tool' || isTerminal(x));
    expect(run.status).toBe('waiting_for_tool');
    const out = await t.call(admin, 'POST', `/v1/runs/${runId}/tool_outputs`, { tool_outputs: [{ tool_call_id: 'call_client', output: { seen: V1, b64: formsOf(V1).b64 } }] });
    expect(out.status).toBe(200);

    run = await waitForRun(t, admin, runId, (x) => x.status === 'waiting_for_approval' || isTerminal(x));
    expect(run.status).toBe('waiting_for_approval');
    const approvals = await t.call(admin, 'GET', `/v1/runs/${runId}/approvals`);
    const approvalId = approvals.body.data.find((a: any) => a.status === 'pending').id;
    const decided = await t.call(admin, 'POST', `/v1/runs/${runId}/approvals/${approvalId}`, { decision: 'approve', reason: `approved, the key is ${V1} (${formsOf(V1).b64})` });
    expect(decided.status).toBe(200);

    run = await waitForRun(t, admin, runId, (x) => x.status === 'waiting_for_input' || isTerminal(x));
    expect(run.status).toBe('waiting_for_input');
    // The child's fake model answers with the NEW value split across chunks (it echoes what it was told).
    fake.echo.answer = ['The key is ', V2.slice(0, 7), V2.slice(7, 15), `${V2.slice(15)} - done.`];
    const answer = await startRun(t, admin, sid, { input: userInput(`my key is ${V1} or ${encodeURIComponent(V2)}`) });
    expect(answer.status).toBe(202);
    expect(answer.body).toMatchObject({ run_id: runId, answered: true });

    run = await waitForRun(t, admin, runId, isTerminal, 60_000);
    expect(run.status).toBe('completed');
    const subs = await t.call(admin, 'GET', `/v1/sessions/${sid}/subagents`);
    for (const s of subs.body.data) {
      sessions.push(s.id);
      const childRuns = await t.call(admin, 'GET', `/v1/sessions/${s.id}/runs`);
      for (const c of childRuns.body.data) runs.push(c.id);
    }
    expect(sessions.length).toBeGreaterThan(1);

    // What the tools and the model said, masked where it stands.
    const events = (await t.call(admin, 'GET', `/v1/runs/${runId}/events?limit=1000`)).body.data as any[];
    const result = (id: string) => events.find((e) => (e.type === 'tool.completed' || e.type === 'tool.failed') && e.data.tool_call_id === id)?.data;
    expect(result('call_echo').result.forms).toEqual({ raw: MASK, b64: MASK, basic: expect.stringContaining(MASK), url: MASK, latin1: MASK, escaped: MASK, unicode: MASK });
    expect(result('call_echo').result.escaped).toBe(MASK);
    for (const pad of pads) {
      const err = result(`call_err_${pad}`).error;
      expect(err.message).toContain('answered HTTP');
      for (let k = 2; k < V1.length; k++) expect(err.message.includes(`${'E'.repeat(3)}${V1.slice(0, k)}`)).toBe(false);
    }
    expect(result('call_text').error.message).toContain(`not json: ${MASK}`);
    expect(JSON.stringify(result('call_split').result)).toContain(MASK);
    expect(result('call_rpc').error.message).toContain(MASK);
    expect(result('call_cb').result).toMatchObject({ echo: `I got ${MASK}`, forms: { raw: MASK, b64: MASK, url: MASK, latin1: MASK } });
    expect(result('call_client').result).toEqual({ seen: MASK, b64: MASK });
    expect(result('call_ask').result).toMatchObject({ answer: expect.stringContaining(MASK) });
    const waited = result('call_wait').result;
    expect(waited.subagents[0].text).toBe(`The key is ${MASK} - done.`);
    // The agent's tools/list description, as stored with the agent version.
    const agent = await t.call(admin, 'GET', '/v1/agents/leaky');
    expect(agent.body.tools.find((x: any) => x.name === 'm.split').description).toBe(`Returns parts. Key ${MASK}`);
  }, 120_000);

  it('no surface holds either version: events, SSE, messages, runs, audit + export, webhooks, OpenAI, AG-UI, the model server', async () => {
    // One more run through AG-UI on the same session (its stream replays the thread's messages).
    const agui = await fetch(`${t.url}/ag-ui/agents/leaky`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ threadId: sessions[0], runId: `r-${rnd()}`, messages: [{ id: `u-${rnd()}`, role: 'user', content: script([{ text: 'ok' }]) }], tools: [], context: [], state: {}, forwardedProps: {} }),
    });
    const texts: Array<[string, string]> = [['ag-ui stream', await agui.text()]];
    expect(agui.status).toBe(200);
    const get = async (label: string, path: string, accept = 'application/json') => {
      // A stream (SSE) is read until it ends or for 3 s: what it sent by then is what a client saw.
      const res = await fetch(`${t.url}${path}`, { headers: { authorization: `Bearer ${admin}`, accept }, signal: AbortSignal.timeout(3_000) });
      let text = '';
      try {
        for await (const chunk of res.body!) text += Buffer.from(chunk as Uint8Array).toString('utf8');
      } catch {
        // timed out: keep what arrived
      }
      texts.push([label, text]);
    };
    for (const sid of sessions) {
      await get(`messages ${sid}`, `/v1/sessions/${sid}/messages?limit=100`);
      await get(`session events ${sid}`, `/v1/sessions/${sid}/events?limit=1000`);
      await get(`openai items ${sid}`, `/openai/v1/agents/sessions/${sid}/items?limit=100`);
      await get(`openai events ${sid}`, `/openai/v1/agents/sessions/${sid}/events`, 'text/event-stream');
      await get(`session sse ${sid}`, `/v1/sessions/${sid}/events`, 'text/event-stream');
    }
    for (const id of runs) {
      await get(`run ${id}`, `/v1/runs/${id}`);
      await get(`events ${id}`, `/v1/runs/${id}/events?limit=1000`);
      await get(`sse ${id}`, `/v1/runs/${id}/events`, 'text/event-stream');
    }
    await get('approvals', `/v1/runs/${runs[0]}/approvals`);
    // The audit trail and its exports (the outbox is drained by every read).
    await get('audit', `/v1/admin/audit?run_id=${runs[0]}&limit=100`);
    await get('audit export jsonl', '/v1/admin/audit/export?format=ndjson');
    await get('audit export csv', '/v1/admin/audit/export?format=csv');
    // Webhooks: give the deliveries a moment.
    for (let i = 0; i < 100 && !hooks.received.some((h) => h.payload.type === 'run.completed'); i++) await new Promise((r) => setTimeout(r, 100));
    expect(hooks.received.length).toBeGreaterThan(0);
    texts.push(['webhooks', JSON.stringify(hooks.received.map((h) => h.payload))]);
    texts.push(['model server', JSON.stringify(fake.received.map((r) => r.body))]);
    expect(fake.received.length).toBeGreaterThan(1);

    const leaks: string[] = [];
    for (const v of [V1, V2]) {
      const needles = [...new Set([...Object.values(formsOf(v)).filter((f) => f !== formsOf(v).basic), v.slice(0, 8)])];
      for (const [label, text] of texts) for (const n of needles) if (text.includes(n)) leaks.push(`${label}: ${n}`);
    }
    expect(leaks).toEqual([]);
    const all = texts.map(([, x]) => x).join('\n');
    expect(all).toContain(MASK);
    // The audit trail recorded the tool outputs, the approval's reason and the ask_user answer, masked.
    const audit = JSON.parse(texts.find(([l]) => l === 'audit')![1]).data as any[];
    const requestOf = (action: string) => audit.find((r) => r.action === action)?.data.request.body;
    expect(requestOf('POST /v1/runs/:id/tool_outputs')).toEqual({ tool_outputs: [{ tool_call_id: 'call_client', output: { seen: MASK, b64: MASK } }] });
    expect(requestOf('POST /v1/runs/:id/approvals/:approval_id')).toMatchObject({ reason: `approved, the key is ${MASK} (${MASK})` });
    const answered = audit.find((r) => r.action === 'POST /v1/sessions/:id/runs' && JSON.stringify(r.data.request.body).includes('my key is'));
    expect(JSON.stringify(answered.data.request.body)).toContain(`my key is ${MASK} or ${MASK}`);
  }, 120_000);
});
