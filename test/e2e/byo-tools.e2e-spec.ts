import * as fs from 'node:fs';
import { HttpAgent } from '@ag-ui/client';
import { DataSource } from 'typeorm';
import { contractOrderProblems, createSession, isTerminal, runEvents, script, startRun, userInput, waitForRun } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';
import { OutboundHttpClient, OutboundUrlPolicy } from '../../src/common/outbound/outbound-http';
import { ExternalTools } from '../../src/modules/agents/infrastructure/tools/external-tools';
import { HeaderSecrets } from '../../src/modules/agents/infrastructure/tools/secret-headers';
import { AgentTool } from '../../src/modules/agents/domain/agent-definition';
import { startHttpToolServer, startMcpServer } from '../helpers/tool-servers';

/**
 * Tools and agents you bring (CONTRACT section 13) against a real MCP server (the SDK's server
 * over Streamable HTTP on loopback) and a real HTTP tool server.
 */
const SECRET = `sekret-${Math.random().toString(36).slice(2)}-value`;
const SECRET_ENV = 'BYO_E2E_TOOL_TOKEN';

describe('tools and agents you bring', () => {
  let t: TestApp;
  let http: Awaited<ReturnType<typeof startHttpToolServer>>;
  let mcp: Awaited<ReturnType<typeof startMcpServer>>;
  const logs: string[] = [];
  const spies: jest.SpyInstance[] = [];
  const admin = KEYS.adminA;

  beforeAll(async () => {
    process.env[SECRET_ENV] = SECRET;
    // Everything the app logs (pino writes to fd 1 through fs; Nest through stdout).
    const capture = (chunk: unknown) => {
      logs.push(typeof chunk === 'string' ? chunk : Buffer.isBuffer(chunk) ? chunk.toString('utf8') : String(chunk));
    };
    const isStd = (fd: unknown) => fd === 1 || fd === 2;
    const realWriteSync = fs.writeSync;
    const realWrite = fs.write;
    const realStdout = process.stdout.write.bind(process.stdout);
    spies.push(
      jest.spyOn(fs, 'writeSync').mockImplementation(((fd: number, data: any, ...rest: any[]) => {
        if (isStd(fd)) capture(data);
        return (realWriteSync as any)(fd, data, ...rest);
      }) as any),
      jest.spyOn(fs, 'write').mockImplementation(((fd: number, data: any, ...rest: any[]) => {
        if (isStd(fd)) capture(data);
        return (realWrite as any)(fd, data, ...rest);
      }) as any),
      jest.spyOn(process.stdout, 'write').mockImplementation(((chunk: any, ...rest: any[]) => {
        capture(chunk);
        return (realStdout as any)(chunk, ...rest);
      }) as any),
    );
    http = await startHttpToolServer();
    mcp = await startMcpServer();
    t = await startTestApp({ LOG_LEVEL: 'debug', APPROVAL_TTL_MS: '60000', TOOL_ENV_SECRETS: SECRET_ENV });
  });
  afterAll(async () => {
    await t?.close();
    await http?.close();
    await mcp?.close();
    for (const s of spies) s.mockRestore();
    delete process.env[SECRET_ENV];
  });

  const headers = { Authorization: `Bearer \${env:${SECRET_ENV}}` };
  const agentBody = (id: string, extra: Record<string, unknown> = {}) => ({
    id,
    description: 'CRM agent',
    instructions: 'Use the CRM.',
    tools: [
      'get_time',
      { type: 'mcp', server: 'crm', url: mcp.url, headers: { 'X-Api-Key': `\${env:${SECRET_ENV}}` }, tools: ['lookup', 'fail', 'hang'], timeout_ms: 800 },
      { type: 'mcp', server: 'pay', url: mcp.url, tools: ['refund'], risk: 'approve' },
      {
        type: 'http',
        name: 'quote',
        description: 'Prices a SKU.',
        parameters: { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'], additionalProperties: false },
        url: `${http.url}/quote`,
        headers,
        idempotent: true,
      },
      { type: 'http', name: 'garbage', description: 'Answers garbage.', parameters: { type: 'object' }, url: `${http.url}/garbage` },
      { type: 'http', name: 'huge', description: 'Answers 2 MiB.', parameters: { type: 'object' }, url: `${http.url}/huge` },
      { type: 'http', name: 'bad', description: 'Answers 400.', parameters: { type: 'object' }, url: `${http.url}/bad` },
      { type: 'http', name: 'hang', description: 'Never answers.', parameters: { type: 'object' }, url: `${http.url}/hang`, timeout_ms: 700 },
      { type: 'http', name: 'private_quote', description: 'Prices a SKU (private).', parameters: { type: 'object' }, url: `${http.url}/quote`, visibility: 'private' },
      { type: 'function', name: 'confirm_with_user', description: 'Asks the user.', parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } },
      ...((extra.tools as unknown[]) ?? []),
    ],
  });

  async function runScript(sid: string, turns: unknown[], key: string = admin) {
    const r = await startRun(t, key, sid, { input: userInput(script(turns)) });
    expect(r.status).toBe(202);
    return r.body.run_id as string;
  }

  let agentCreated = false;
  async function ensureAgent() {
    if (agentCreated) return;
    const r = await t.call(admin, 'POST', '/v1/agents', agentBody('crm_agent'));
    expect(r.status).toBe(201);
    agentCreated = true;
  }

  it('creates an API agent: version 1, MCP tools listed as <server>.<tool>, listed with source', async () => {
    const r = await t.call(admin, 'POST', '/v1/agents', agentBody('crm_agent'));
    expect(r.status).toBe(201);
    agentCreated = true;
    expect(r.body).toMatchObject({ id: 'crm_agent', object: 'agent', version: '1', source: 'api' });
    const names = r.body.tools.map((x: any) => x.name);
    expect(names).toEqual(['get_time', 'crm.lookup', 'crm.fail', 'crm.hang', 'pay.refund', 'quote', 'garbage', 'huge', 'bad', 'hang', 'private_quote', 'confirm_with_user']);
    expect(r.body.tools.find((x: any) => x.name === 'pay.refund')).toMatchObject({ type: 'mcp', server: 'pay', risk: 'approve', executor: 'server' });
    expect(r.body.tools.find((x: any) => x.name === 'confirm_with_user')).toMatchObject({ type: 'function', executor: 'client' });
    expect(mcp.requests.some((q) => q.method === 'tools/list')).toBe(true);
    // The MCP server got the resolved secret; the response shows none.
    expect(mcp.requests.some((q) => q.headers['x-api-key'] === SECRET)).toBe(true);
    expect(r.text).not.toContain(SECRET);

    const list = await t.call(admin, 'GET', '/v1/agents?limit=100');
    const byId = Object.fromEntries(list.body.data.map((a: any) => [a.id, a]));
    expect(byId.crm_agent.source).toBe('api');
    expect(byId.support_agent.source).toBe('file');
    expect((await t.call(KEYS.memberA1, 'GET', '/v1/agents/crm_agent')).body.version).toBe('1');
    // Every view of the agent shows each tool's argument schema, as the model is given it.
    const schemas = {
      get_time: expect.objectContaining({ type: 'object' }),
      'crm.lookup': { type: 'object', properties: { email: { type: 'string', minLength: 3 } }, required: ['email'], additionalProperties: false },
      'pay.refund': { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
      quote: { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'], additionalProperties: false },
      confirm_with_user: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
    };
    const views = [
      r.body,
      (await t.call(KEYS.memberA1, 'GET', '/v1/agents/crm_agent')).body,
      (await t.call(KEYS.memberA1, 'GET', '/v1/agents/crm_agent/versions/1')).body,
      (await t.call(KEYS.memberA1, 'GET', '/v1/agents/crm_agent/versions')).body.data[0],
      byId.crm_agent,
    ];
    for (const view of views) {
      const params = Object.fromEntries(view.tools.map((x: any) => [x.name, x.parameters]));
      expect(params).toMatchObject(schemas);
      expect(view.tools.every((x: any) => x.parameters && typeof x.parameters === 'object')).toBe(true);
    }
    // Taken id; file agents are read-only.
    expect((await t.call(admin, 'POST', '/v1/agents', agentBody('crm_agent'))).status).toBe(409);
    const ro = await t.call(admin, 'POST', '/v1/agents/support_agent/versions', { tools: ['get_time'] });
    expect(ro.status).toBe(409);
    expect(ro.body.error.code).toBe('agent_read_only');
    expect((await t.call(admin, 'DELETE', '/v1/agents/support_agent')).body.error.code).toBe('agent_read_only');
  });

  it('a member cannot create an agent (403); another tenant cannot see or use it (404)', async () => {
    await ensureAgent();
    const m = await t.call(KEYS.memberA1, 'POST', '/v1/agents', agentBody('member_agent'));
    expect(m.status).toBe(403);
    expect(m.body.error.code).toBe('forbidden');
    expect((await t.call(KEYS.memberA1, 'POST', '/v1/agents/crm_agent/versions', { tools: [] })).status).toBe(403);
    expect((await t.call(KEYS.memberA1, 'DELETE', '/v1/agents/crm_agent')).status).toBe(403);
    for (const path of ['/v1/agents/crm_agent', '/v1/agents/crm_agent/versions', '/v1/agents/crm_agent/versions/1']) {
      const r = await t.call(KEYS.adminB, 'GET', path);
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe('agent_not_found');
    }
    const list = await t.call(KEYS.adminB, 'GET', '/v1/agents?limit=100');
    expect(list.body.data.map((a: any) => a.id)).not.toContain('crm_agent');
    const s = await t.call(KEYS.adminB, 'POST', '/v1/sessions', { agent_id: 'crm_agent' });
    expect(s.status).toBe(404);
    expect(s.body.error.code).toBe('agent_not_found');
    expect((await t.call(KEYS.adminB, 'POST', '/v1/agents/crm_agent/versions', { tools: [] })).status).toBe(404);
    expect((await t.call(KEYS.adminB, 'DELETE', '/v1/agents/crm_agent')).status).toBe(404);
  });

  it('refuses URLs outside the allow-list and invalid definitions at definition time (400)', async () => {
    const outside = await t.call(admin, 'POST', '/v1/agents', {
      id: 'evil_agent',
      tools: [{ type: 'http', name: 'exfil', parameters: { type: 'object' }, url: 'http://example.com/steal' }],
    });
    expect(outside.status).toBe(400);
    expect(outside.body.error.details.errors).toEqual(expect.arrayContaining([expect.objectContaining({ field: 'tools[0].url' })]));
    const tricky = await t.call(admin, 'POST', '/v1/agents', { id: 'evil_agent', tools: [{ type: 'mcp', server: 'x', url: 'http://127.0.0.1.evil.example/mcp' }] });
    expect(tricky.status).toBe(400);
    const unknown = await t.call(admin, 'POST', '/v1/agents', { id: 'evil_agent', tools: ['no_such_tool', { type: 'http', name: 'x', url: `${http.url}/quote`, parameters: { type: 'nope' } }] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details.errors.map((e: any) => e.field)).toEqual(expect.arrayContaining(['tools[0]', 'tools[1].parameters']));
    const down = await t.call(admin, 'POST', '/v1/agents', { id: 'evil_agent', tools: [{ type: 'mcp', server: 'gone', url: 'http://127.0.0.1:1/mcp' }] });
    expect(down.status).toBe(400);
    expect((await t.call(admin, 'GET', '/v1/agents/evil_agent')).status).toBe(404);
  });

  it('the scripted model calls crm.lookup and an http tool: results reach the model context and the stream', async () => {
    await ensureAgent();
    const sid = await createSession(t, admin, { agent_id: 'crm_agent' });
    const before = http.seen.length;
    const runId = await runScript(sid, [
      { tool_calls: [{ name: 'crm.lookup', arguments: { email: 'ada@example.com' } }, { name: 'quote', arguments: { sku: 'KB-42' } }] },
      { text: 'found them' },
    ]);
    const run = await waitForRun(t, admin, runId, isTerminal);
    expect(run.status).toBe('completed');
    const events = await runEvents(t, admin, runId);
    expect(contractOrderProblems(events)).toEqual([]);
    const done = events.filter((e) => e.type === 'tool.completed');
    const lookup = done.find((e) => e.data.tool_name === 'crm.lookup');
    expect(lookup.data.result).toEqual({ email: 'ada@example.com', name: 'Ada Lovelace', tier: 'gold' });
    const quote = done.find((e) => e.data.tool_name === 'quote');
    expect(quote.data.result).toMatchObject({ sku: 'KB-42', price_cents: 4200 });
    // The MCP call carried the side-effect key; the http call its envelope and Idempotency-Key.
    const lookupCall = events.find((e) => e.type === 'tool.requested' && e.data.tool_name === 'crm.lookup');
    expect(mcp.calls.find((c) => c.name === 'lookup')?.meta?.idempotency_key).toBe(`${runId}:${lookupCall.data.tool_call_id}`);
    const quoteCall = events.find((e) => e.type === 'tool.requested' && e.data.tool_name === 'quote');
    const req = http.seen.slice(before).find((s) => s.path === '/quote')!;
    expect(req.headers['idempotency-key']).toBe(`${runId}:${quoteCall.data.tool_call_id}`);
    expect(req.headers.authorization).toBe(`Bearer ${SECRET}`);
    // The absolute callback URL (PUBLIC_BASE_URL, here the address the test server listens on) in the body and as Callback-Url.
    const callbackUrl = `${t.url}/v1/runs/${runId}/callbacks/${quoteCall.data.tool_call_id}`;
    expect(req.body).toEqual({ arguments: { sku: 'KB-42' }, run_id: runId, tool_call_id: quoteCall.data.tool_call_id, session_id: sid, callback_url: callbackUrl });
    expect(req.headers['callback-url']).toBe(callbackUrl);
    // The tool messages (what the model reads next turn) hold the results.
    const msgs = await t.call(admin, 'GET', `/v1/sessions/${sid}/messages?limit=100`);
    const results = msgs.body.data.filter((m: any) => m.role === 'tool').flatMap((m: any) => m.content);
    expect(results).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'tool_result', tool_call_id: lookupCall.data.tool_call_id, ok: true, result: expect.objectContaining({ name: 'Ada Lovelace' }) }),
        expect.objectContaining({ type: 'tool_result', tool_call_id: quoteCall.data.tool_call_id, ok: true }),
      ]),
    );
  });

  it('failures are data for the model: isError, 4xx, garbage bodies, an answer over 1 MiB (too_large, as over MCP), invalid arguments; the run goes on', async () => {
    await ensureAgent();
    const sid = await createSession(t, admin, { agent_id: 'crm_agent' });
    const calls0 = mcp.calls.length;
    const runId = await runScript(sid, [
      {
        tool_calls: [
          { name: 'crm.fail', arguments: {} },
          { name: 'bad', arguments: {} },
          { name: 'garbage', arguments: {} },
          { name: 'huge', arguments: {} },
          { name: 'crm.lookup', arguments: { email: 42 } },
          { name: 'quote', arguments: { sku: 'A', extra: true } },
        ],
      },
      { text: 'ok' },
    ]);
    const run = await waitForRun(t, admin, runId, isTerminal);
    expect(run.status).toBe('completed');
    const failed = Object.fromEntries((await runEvents(t, admin, runId)).filter((e) => e.type === 'tool.failed').map((e) => [e.data.tool_name, e.data.error]));
    expect(failed['crm.fail']).toMatchObject({ code: 'tool_failed', retryable: false });
    expect(failed['crm.fail'].message).toContain('read-only today');
    expect(failed.bad).toMatchObject({ code: 'tool_failed', retryable: false });
    expect(failed.garbage).toMatchObject({ code: 'tool_failed', retryable: false });
    expect(failed.huge).toMatchObject({ code: 'too_large', retryable: false });
    expect(failed['crm.lookup']).toMatchObject({ code: 'invalid_tool_arguments' });
    expect(failed.quote).toMatchObject({ code: 'invalid_tool_arguments' });
    // Invalid arguments never reached the server.
    expect(mcp.calls.slice(calls0).map((c) => c.name)).toEqual(['fail']);
  });

  it('an MCP tool with risk approve waits for the approval, then runs once with its key', async () => {
    await ensureAgent();
    const sid = await createSession(t, admin, { agent_id: 'crm_agent' });
    const runId = await runScript(sid, [{ tool_calls: [{ name: 'pay.refund', arguments: { order_id: 'O-1' } }] }, { text: 'refunded' }]);
    const waiting = await waitForRun(t, admin, runId, (r) => r.status === 'waiting_for_approval' || isTerminal(r));
    expect(waiting.status).toBe('waiting_for_approval');
    expect(mcp.calls.filter((c) => c.name === 'refund')).toHaveLength(0);
    const approvalId = waiting.pending_approvals[0].approval_id;
    expect((await t.call(admin, 'POST', `/v1/runs/${runId}/approvals/${approvalId}`, { decision: 'approve' })).status).toBe(200);
    const done = await waitForRun(t, admin, runId, isTerminal);
    expect(done.status).toBe('completed');
    const refunds = mcp.calls.filter((c) => c.name === 'refund');
    expect(refunds).toHaveLength(1);
    const events = await runEvents(t, admin, runId);
    const requested = events.find((e) => e.type === 'tool.requested');
    expect(requested.data).toMatchObject({ tool_name: 'pay.refund', risk: 'approve' });
    expect(refunds[0].meta.idempotency_key).toBe(`${runId}:${requested.data.tool_call_id}`);
    expect(events.find((e) => e.type === 'tool.completed').data.result).toMatchObject({ refund_id: 'R-O-1' });
  });

  it('a private http tool is redacted for members (projection), full for admins', async () => {
    await ensureAgent();
    const member = KEYS.memberA1;
    const sid = await createSession(t, member, { agent_id: 'crm_agent' });
    const runId = await runScript(sid, [{ tool_calls: [{ name: 'private_quote', arguments: { sku: 'P-1' } }] }, { text: 'ok' }], member);
    await waitForRun(t, member, runId, isTerminal);
    const mine = (await runEvents(t, member, runId)).find((e) => e.type === 'tool.completed');
    expect(mine.data.result).toEqual({ redacted: true });
    const full = (await runEvents(t, admin, runId)).find((e) => e.type === 'tool.completed');
    expect(full.data.result).toMatchObject({ price_cents: 4200 });
  });

  it('a function tool hands the call to the client (waiting_for_tool)', async () => {
    await ensureAgent();
    const sid = await createSession(t, admin, { agent_id: 'crm_agent' });
    const runId = await runScript(sid, [{ tool_calls: [{ name: 'confirm_with_user', arguments: { q: 'sure?' } }] }, { text: 'thanks' }]);
    const w = await waitForRun(t, admin, runId, (r) => r.status === 'waiting_for_tool' || isTerminal(r));
    expect(w.status).toBe('waiting_for_tool');
    const callId = w.pending_tool_calls[0].tool_call_id;
    const out = await t.call(admin, 'POST', `/v1/runs/${runId}/tool_outputs`, { tool_outputs: [{ tool_call_id: callId, output: { answer: 'yes' } }] });
    expect(out.status).toBe(200);
    expect((await waitForRun(t, admin, runId, isTerminal)).status).toBe('completed');
  });

  it('a session may be created with an inline configuration (model, instructions, function tools) which it pins', async () => {
    const s = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', {
      agent: { model: 'scripted', instructions: 'Be brief.', tools: ['get_time', { type: 'function', name: 'confirm', description: 'Confirm.', parameters: { type: 'object' } }] },
    });
    expect(s.status).toBe(201);
    expect(s.body.agent).toMatchObject({ version: '1', model: 'scripted' });
    expect(s.body.agent.id).toMatch(/^inline_/);
    // Not listed as an agent of the tenant.
    expect((await t.call(admin, 'GET', '/v1/agents?limit=100')).body.data.map((a: any) => a.id)).not.toContain(s.body.agent.id);
    const runId = await runScript(s.body.id, [{ tool_calls: [{ name: 'get_time', arguments: {} }, { name: 'confirm', arguments: {} }] }, { text: 'k' }], KEYS.memberA1);
    const w = await waitForRun(t, KEYS.memberA1, runId, (r) => r.status === 'waiting_for_tool' || isTerminal(r));
    expect(w.status).toBe('waiting_for_tool');
    expect(w.pending_tool_calls.map((c: any) => c.tool_name)).toEqual(['confirm']);
    // The pinned configuration and its tools can be read by its tenant (the console's session page), by no other.
    const pinned = await t.call(KEYS.memberA1, 'GET', `/v1/agents/${s.body.agent.id}/versions/1`);
    expect(pinned.status).toBe(200);
    expect(pinned.body.tools.map((x: any) => [x.name, x.executor])).toEqual([
      ['get_time', 'server'],
      ['confirm', 'client'],
    ]);
    expect((await t.call(KEYS.adminB, 'GET', `/v1/agents/${s.body.agent.id}/versions/1`)).status).toBe(404);
    const bad = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', { agent: { tools: [{ type: 'http', name: 'x', parameters: { type: 'object' }, url: `${http.url}/quote` }] } });
    expect(bad.status).toBe(400);
    const both = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', { agent_id: 'assistant', agent: { tools: [] } });
    expect(both.status).toBe(400);
    // The configuration commits with its session: a retried key replays it and stores no second one.
    const ds = t.app.get(DataSource);
    const hidden = async () => (await ds.query(`SELECT count(*)::int AS n FROM agent_versions WHERE hidden`))[0].n as number;
    const n0 = await hidden();
    const body = { agent: { instructions: 'Once.', tools: ['get_time'] } };
    const opts = { 'Idempotency-Key': `inline-${Date.now()}` };
    const first = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', body, opts);
    const again = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', body, opts);
    expect(first.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.id).toBe(first.body.id);
    expect(await hidden()).toBe(n0 + 1);
  });

  it("AG-UI frontend tools sit next to the agent's own tools: its http tool runs on the server, the request's tool goes to the client", async () => {
    await ensureAgent();
    const agent = new HttpAgent({ url: `${t.url}/ag-ui/agents/crm_agent`, headers: { Authorization: `Bearer ${admin}` }, threadId: `byo-agui-${Date.now()}` });
    const tools = [{ name: 'pick_color', description: 'Lets the user pick a color.', parameters: { type: 'object', properties: { options: { type: 'array' } } } }];
    agent.addMessage({
      id: 'u1',
      role: 'user',
      content: script([
        { tool_calls: [{ id: 'call_quote_agui', name: 'quote', arguments: { sku: 'AG-1' } }, { id: 'call_pick_agui', name: 'pick_color', arguments: { options: ['red', 'blue'] } }] },
        { text: 'Blue it is, at 42.00.' },
      ]),
    });
    const collect = async (runId: string) => {
      const events: any[] = [];
      await agent.runAgent({ runId, tools } as any, { onEvent: ({ event }) => void events.push(event) });
      return events;
    };
    const first = await collect(`byo-agui-1-${Date.now()}`);
    const finished = first.find((e) => e.type === 'RUN_FINISHED');
    expect(finished.outcome).toEqual({ type: 'success', pendingToolCallIds: ['call_pick_agui'] });
    const result = first.find((e) => e.type === 'TOOL_CALL_RESULT' && e.toolCallId === 'call_quote_agui');
    expect(JSON.parse(result.content)).toMatchObject({ sku: 'AG-1', price_cents: 4200 });
    agent.addMessage({ id: 't1', role: 'tool', toolCallId: 'call_pick_agui', content: JSON.stringify({ color: 'blue' }) });
    const second = await collect(`byo-agui-2-${Date.now()}`);
    expect(second.find((e) => e.type === 'RUN_FINISHED').outcome).toEqual({ type: 'success' });
    expect(second.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT').map((e) => e.delta).join('')).toContain('Blue it is');
  });

  it('a tool server that hangs is cut at the deadline (http and mcp)', async () => {
    await ensureAgent();
    const sid = await createSession(t, admin, { agent_id: 'crm_agent' });
    const t0 = Date.now();
    const runId = await runScript(sid, [{ tool_calls: [{ name: 'hang', arguments: {} }, { name: 'crm.hang', arguments: {} }] }, { text: 'gave up' }]);
    const run = await waitForRun(t, admin, runId, isTerminal);
    expect(run.status).toBe('completed');
    expect(Date.now() - t0).toBeLessThan(10_000);
    const failed = (await runEvents(t, admin, runId)).filter((e) => e.type === 'tool.failed');
    expect(failed.map((e) => [e.data.tool_name, e.data.error.code])).toEqual([
      ['hang', 'tool_timeout'],
      ['crm.hang', 'tool_timeout'],
    ]);
    for (const e of failed) expect(e.data.duration_ms).toBeLessThan(5_000);
    // The http call was aborted (its connection closed), not left running.
    await new Promise((r) => setTimeout(r, 200));
    expect(http.aborted()).toBeGreaterThanOrEqual(1);
  });

  it('refuses a URL outside the allow-list again at call time (http and mcp): nothing is sent', async () => {
    // A node whose allow-list no longer holds the tool servers (the definition was accepted elsewhere or earlier).
    const narrow = new ExternalTools(new OutboundHttpClient(new OutboundUrlPolicy(['http://localhost:1'])), t.app.get(HeaderSecrets));
    const base = { description: '', parameters: { type: 'object' }, risk: 'auto', visibility: 'public', idempotent: true, executor: 'server', timeoutMs: 1000 } as const;
    const ctx = { tenantId: 't', subjectId: 's', sessionId: 'sess_x', runId: 'run_x', toolCallId: 'call_x', idempotencyKey: 'run_x:call_x', attempt: 1, signal: new AbortController().signal, deadline: Date.now() + 5000 };
    const seen = http.seen.length;
    const mcpSeen = mcp.requests.length;
    const h: AgentTool = { ...base, name: 'quote', binding: { kind: 'http', url: `${http.url}/quote`, headers: {} } };
    const outcome = await narrow.callHttp(h, h.binding as any, { sku: 'x' }, ctx, Date.now() + 1000);
    expect(outcome).toMatchObject({ ok: false, error: { code: 'tool_failed', retryable: false } });
    expect((outcome as any).error.message).toContain('OUTBOUND_URL_ALLOWLIST');
    const m: AgentTool = { ...base, name: 'crm.lookup', binding: { kind: 'mcp', server: 'crm', url: mcp.url, headers: {}, tool: 'lookup' } };
    const mo = await narrow.callMcp(m, m.binding as any, { email: 'a@b.c' }, ctx, Date.now() + 1000);
    expect(mo).toMatchObject({ ok: false, error: { code: 'tool_failed', retryable: false } });
    expect(http.seen.length).toBe(seen);
    expect(mcp.requests.length).toBe(mcpSeen);
    await narrow.onModuleDestroy();
  });

  it('an MCP server that is down makes its calls fail as retryable tool_failed; the run goes on', async () => {
    const down = await startMcpServer();
    const r = await t.call(admin, 'POST', '/v1/agents', { id: 'flaky_mcp_agent', tools: [{ type: 'mcp', server: 'd', url: down.url, tools: ['lookup'] }] });
    expect(r.status).toBe(201);
    await down.close();
    const sid = await createSession(t, admin, { agent_id: 'flaky_mcp_agent' });
    const runId = await runScript(sid, [{ tool_calls: [{ name: 'd.lookup', arguments: { email: 'a@b.c' } }] }, { text: 'carried on' }]);
    const run = await waitForRun(t, admin, runId, isTerminal);
    expect(run.status).toBe('completed');
    const failed = (await runEvents(t, admin, runId)).filter((e) => e.type === 'tool.failed');
    expect(failed).toHaveLength(1);
    expect(failed[0].data.error).toMatchObject({ code: 'tool_failed', retryable: true });
  });

  it('a session pinned to v1 keeps v1 (and its tools) after v2; deleting stops new sessions only', async () => {
    const v1 = await t.call(admin, 'POST', '/v1/agents', { id: 'pin_agent', tools: ['get_time'] });
    expect(v1.status).toBe(201);
    const s1 = await createSession(t, admin, { agent_id: 'pin_agent' });
    const v2 = await t.call(admin, 'POST', '/v1/agents/pin_agent/versions', { instructions: 'v2', tools: [{ type: 'mcp', server: 'crm', url: mcp.url, tools: ['lookup'] }] });
    expect(v2.status).toBe(201);
    expect(v2.body.version).toBe('2');
    const s2 = await createSession(t, admin, { agent_id: 'pin_agent' });
    expect((await t.call(admin, 'GET', `/v1/sessions/${s1}`)).body.agent).toMatchObject({ id: 'pin_agent', version: '1' });
    expect((await t.call(admin, 'GET', `/v1/sessions/${s2}`)).body.agent).toMatchObject({ id: 'pin_agent', version: '2' });
    const versions = await t.call(admin, 'GET', '/v1/agents/pin_agent/versions');
    expect(versions.body.data.map((v: any) => v.version)).toEqual(['1', '2']);
    expect((await t.call(admin, 'GET', '/v1/agents/pin_agent/versions/1')).body.tools.map((x: any) => x.name)).toEqual(['get_time']);
    // v1's session cannot use v2's tool; v2's can.
    const r1 = await runScript(s1, [{ tool_calls: [{ name: 'crm.lookup', arguments: { email: 'a@b.c' } }] }, { text: 'x' }]);
    const f1 = (await runEvents(t, admin, (await waitForRun(t, admin, r1, isTerminal)).id)).find((e) => e.type === 'tool.failed');
    expect(f1.data.error.code).toBe('tool_not_found');
    const r2 = await runScript(s2, [{ tool_calls: [{ name: 'crm.lookup', arguments: { email: 'a@b.c' } }] }, { text: 'x' }]);
    expect((await runEvents(t, admin, (await waitForRun(t, admin, r2, isTerminal)).id)).some((e) => e.type === 'tool.completed')).toBe(true);
    // Delete: 204; no new sessions; existing ones keep their version and still run.
    expect((await t.call(admin, 'DELETE', '/v1/agents/pin_agent')).status).toBe(204);
    expect((await t.call(admin, 'POST', '/v1/sessions', { agent_id: 'pin_agent' })).status).toBe(404);
    expect((await t.call(admin, 'GET', '/v1/agents/pin_agent')).status).toBe(404);
    const r3 = await runScript(s2, [{ tool_calls: [{ name: 'crm.lookup', arguments: { email: 'a@b.c' } }] }, { text: 'still here' }]);
    expect((await waitForRun(t, admin, r3, isTerminal)).status).toBe('completed');
  });

  it('the secret value appears nowhere: database (every table), logs, audit, events, responses', async () => {
    await ensureAgent();
    // The secret was used (http and mcp calls above, or here).
    const sid = await createSession(t, admin, { agent_id: 'crm_agent' });
    const runId = await runScript(sid, [{ tool_calls: [{ name: 'quote', arguments: { sku: 'S' } }, { name: 'crm.lookup', arguments: { email: 'x@y.z' } }] }, { text: 'k' }]);
    await waitForRun(t, admin, runId, isTerminal);
    expect(http.seen.some((s) => s.headers.authorization === `Bearer ${SECRET}`)).toBe(true);

    const ds = t.app.get(DataSource);
    const tables: Array<{ table_name: string }> = await ds.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`);
    expect(tables.length).toBeGreaterThan(5);
    const hits: string[] = [];
    for (const { table_name } of tables) {
      const rows = await ds.query(`SELECT count(*)::int AS n FROM "${table_name}" x WHERE x::text LIKE $1`, [`%${SECRET}%`]);
      if (rows[0].n > 0) hits.push(table_name);
    }
    expect(hits).toEqual([]);
    // The definition is stored with the template, not the value.
    const stored = await ds.query(`SELECT tools::text AS t FROM agent_versions WHERE agent_id = 'crm_agent'`);
    expect(stored[0].t).toContain(`\${env:${SECRET_ENV}}`);

    const audit = await t.call(admin, 'GET', `/v1/admin/audit?session_id=${sid}&limit=100`);
    expect(audit.status).toBe(200);
    expect(audit.text).not.toContain(SECRET);
    const events = await t.call(admin, 'GET', `/v1/sessions/${sid}/events?limit=1000`);
    expect(events.text).not.toContain(SECRET);
    expect((await t.call(admin, 'GET', '/v1/agents/crm_agent')).text).not.toContain(SECRET);
    expect(logs.length).toBeGreaterThan(0); // the capture works
    expect(logs.join('')).not.toContain(SECRET);
  });
});
