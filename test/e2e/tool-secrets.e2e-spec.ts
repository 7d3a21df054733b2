import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, IncomingMessage } from 'node:http';
import { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, isInitializeRequest, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { DataSource } from 'typeorm';
import { SERVICE_CONFIG_VARIABLES } from '../../src/common/config/tool-env-secrets';
import { SECRET_UNAVAILABLE } from '../../src/modules/agents/infrastructure/tools/secret-headers';
import { createSession, isTerminal, runEvents, script, startRun, userInput, waitForRun } from '../helpers/runs';
import { KEYS, startTestApp, TEST_API_KEYS, TestApp } from '../helpers/test-app';

/**
 * Issue #31: a tenant cannot read the server's configuration through a tool header, tenant
 * secrets stay the tenant's, and what comes back is masked. A receiver records every request the
 * service makes (http tools and MCP, `tools/list` included); none may carry a configuration value.
 */

interface Recorded {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** One loopback server: `/echo` (an http tool that echoes the request) and `/mcp` (a stateful MCP server that echoes headers). */
async function startReceiver() {
  const seen: Recorded[] = [];
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const build = (headersOf: () => IncomingMessage['headers']) => {
    const s = new Server({ name: 'echo', version: '1.0.0' }, { capabilities: { tools: {} } });
    s.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [
        {
          name: 'echo',
          // An echoing peer: the key it was sent goes into what is stored with the agent version.
          description: `Echoes. You sent ${String(headersOf()['x-api-key'] ?? '')}`,
          inputSchema: { type: 'object', properties: {} },
        },
      ],
    }));
    s.setRequestHandler(CallToolRequestSchema, async () => {
      const h = headersOf();
      return {
        content: [{ type: 'text', text: `key ${String(h['x-api-key'] ?? '')}` }],
        structuredContent: { key: h['x-api-key'] ?? null, session: h['mcp-session-id'] ?? null, auth: h.authorization ?? null },
      };
    });
    return s;
  };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    seen.push({ path: req.url ?? '/', headers: req.headers, body: text });
    if (req.url === '/echo') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ headers: req.headers, body: JSON.parse(text || 'null') }));
      return;
    }
    if (req.url !== '/mcp') return void res.writeHead(404).end();
    const body = text ? JSON.parse(text) : undefined;
    const sid = req.headers['mcp-session-id'] as string | undefined;
    let transport = sid ? transports.get(sid) : undefined;
    if (!transport) {
      if (req.method !== 'POST' || !isInitializeRequest(body)) return void res.writeHead(400).end('{"jsonrpc":"2.0","error":{"code":-32000,"message":"no session"},"id":null}');
      transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), enableJsonResponse: true, onsessioninitialized: (id) => void transports.set(id, transport!) });
      const holder = transport as StreamableHTTPServerTransport & { headers?: IncomingMessage['headers'] };
      await build(() => holder.headers ?? {}).connect(transport);
    }
    // The tool handlers read the headers of the request being handled (calls of one client are sequential).
    (transport as StreamableHTTPServerTransport & { headers?: IncomingMessage['headers'] }).headers = req.headers;
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    seen,
    close: async () => {
      for (const t of transports.values()) await t.close().catch(() => undefined);
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const rnd = () => Math.random().toString(36).slice(2, 12);
/** Distinctive values of the service's own configuration, set in this process's environment for the test. */
const CONFIG_VALUES: Record<string, string> = {
  API_KEYS: TEST_API_KEYS,
  AUDIT_HMAC_KEY: `audit-hmac-${rnd()}-${rnd()}-${rnd()}`,
  WEBHOOK_SECRET_KEY: `webhook-key-${rnd()}-${rnd()}-${rnd()}`,
  SECRETS_KEY: `secrets-key-${rnd()}-${rnd()}-${rnd()}`,
  OPENAI_API_KEY: `sk-test-${rnd()}${rnd()}`,
  PGPASSWORD: `pgpass-${rnd()}`,
};
const A_SECRET = `a-crm-${rnd()}${rnd()}`;
const A_SECRET_2 = `a-crm-rotated-${rnd()}${rnd()}`;
const B_SECRET = `b-crm-${rnd()}${rnd()}`;
const SHARED_ENV = `shared-env-${rnd()}${rnd()}`;
const A_ONLY_ENV = `a-only-env-${rnd()}${rnd()}`;

describe('tool headers and secrets (issue #31)', () => {
  let t: TestApp;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  const saved: Record<string, string | undefined> = {};
  const adminA = KEYS.adminA;
  const adminB = KEYS.adminB;

  beforeAll(async () => {
    rx = await startReceiver();
    t = await startTestApp({
      AUDIT_HMAC_KEY: CONFIG_VALUES.AUDIT_HMAC_KEY,
      WEBHOOK_SECRET_KEY: CONFIG_VALUES.WEBHOOK_SECRET_KEY,
      SECRETS_KEY: CONFIG_VALUES.SECRETS_KEY,
      TOOL_ENV_SECRETS: 'SHARED_TOOL_TOKEN,A_ONLY_TOKEN@tenant_a,LISTED_BUT_UNSET',
      OUTBOUND_URL_ALLOWLIST: 'http://127.0.0.1:*',
    });
    // The process environment holds the configuration as a deployed server's would (the app got it
    // as config above; what `${env:...}` could reach is process.env).
    for (const [k, v] of Object.entries({ ...CONFIG_VALUES, SHARED_TOOL_TOKEN: SHARED_ENV, A_ONLY_TOKEN: A_ONLY_ENV })) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
  });
  afterAll(async () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await t?.close();
    await rx?.close();
  });

  const httpTool = (headers: Record<string, string>, name = 'echo_http') => ({ type: 'http', name, parameters: { type: 'object' }, url: `${rx.base}/echo`, headers });
  const mcpTool = (headers: Record<string, string>, server = 'm') => ({ type: 'mcp', server, url: `${rx.base}/mcp`, headers });
  const defineAgent = (key: string, id: string, tools: unknown[]) => t.call(key, 'POST', '/v1/agents', { id, tools });

  /** Every configuration value of this process, and the API keys one by one. */
  function configValues(): string[] {
    const keys = Object.values(KEYS);
    const db = process.env.DATABASE_URL ? [process.env.DATABASE_URL, t.databaseUrl] : [];
    return [...Object.values(CONFIG_VALUES), ...keys, ...db];
  }

  it('refuses ${env:NAME} of every configuration variable, unlisted and unset names, and unknown secrets: one 400 message, nothing sent', async () => {
    const before = rx.seen.length;
    const names = [...SERVICE_CONFIG_VARIABLES, 'PGPASSWORD', 'HOME', 'UNLISTED_VARIABLE', 'LISTED_BUT_UNSET'];
    expect(names).toEqual(expect.arrayContaining(['API_KEYS', 'DATABASE_URL', 'AUDIT_HMAC_KEY', 'WEBHOOK_SECRET_KEY', 'SECRETS_KEY']));
    for (const name of names) {
      for (const tool of [httpTool({ 'X-Api-Key': `\${env:${name}}` }), mcpTool({ 'X-Api-Key': `Bearer \${env:${name}}` })]) {
        const r = await defineAgent(adminA, 'exfil_agent', [tool]);
        expect({ name, status: r.status }).toEqual({ name, status: 400 });
        expect(r.body.error.code).toBe('invalid_request');
        expect(r.body.error.details.errors).toEqual([{ field: 'tools[0].headers.X-Api-Key', message: SECRET_UNAVAILABLE }]);
      }
    }
    // A secret that does not exist, and a listed variable for another tenant: the same message.
    for (const [key, header] of [
      [adminA, '${secret:NO_SUCH_SECRET}'],
      [adminB, '${env:A_ONLY_TOKEN}'],
    ] as const) {
      const r = await defineAgent(key, 'exfil_agent', [httpTool({ 'X-Api-Key': header })]);
      expect(r.status).toBe(400);
      expect(r.body.error.details.errors).toEqual([{ field: 'tools[0].headers.X-Api-Key', message: SECRET_UNAVAILABLE }]);
    }
    // Malformed references are field errors too.
    const bad = await defineAgent(adminA, 'exfil_agent', [httpTool({ 'X-Api-Key': '${vault:API_KEYS}' })]);
    expect(bad.status).toBe(400);
    expect(rx.seen.length).toBe(before);
    expect((await t.call(adminA, 'GET', '/v1/agents/exfil_agent')).status).toBe(404);
  });

  it('${secret:NAME} is the tenant own: A resolves A, B cannot resolve A, the same name in B is B; ${env:NAME} as listed', async () => {
    expect((await t.call(adminA, 'PUT', '/v1/secrets/CRM_TOKEN', { value: A_SECRET })).status).toBe(200);
    const refusedB = await defineAgent(adminB, 'crm', [httpTool({ 'X-Api-Key': '${secret:CRM_TOKEN}' })]);
    expect(refusedB.status).toBe(400);
    expect(refusedB.body.error.details.errors).toEqual([{ field: 'tools[0].headers.X-Api-Key', message: SECRET_UNAVAILABLE }]);

    const toolsA = [
      httpTool({ 'X-Api-Key': '${secret:CRM_TOKEN}', Authorization: 'Bearer ${env:A_ONLY_TOKEN}' }),
      mcpTool({ 'X-Api-Key': '${secret:CRM_TOKEN}', Authorization: 'Bearer ${env:SHARED_TOOL_TOKEN}' }),
    ];
    const a = await defineAgent(adminA, 'crm', toolsA);
    expect(a.status).toBe(201);
    // tools/list went out with A's secret, and the echoed description is stored masked.
    const list = rx.seen.filter((s) => s.path === '/mcp' && s.body.includes('tools/list'));
    expect(list.at(-1)!.headers['x-api-key']).toBe(A_SECRET);
    expect(a.text).not.toContain(A_SECRET);
    expect(a.body.tools.find((x: any) => x.name === 'm.echo').description).toBe('Echoes. You sent [secret:CRM_TOKEN]');

    expect((await t.call(adminB, 'PUT', '/v1/secrets/CRM_TOKEN', { value: B_SECRET })).status).toBe(200);
    const b = await defineAgent(adminB, 'crm', [httpTool({ 'X-Api-Key': '${secret:CRM_TOKEN}', Authorization: 'Bearer ${env:SHARED_TOOL_TOKEN}' }), mcpTool({})]);
    expect(b.status).toBe(201);
  });

  async function runTools(key: string, calls: Array<{ name: string; arguments: Record<string, unknown> }>) {
    const sid = await createSession(t, key, { agent_id: 'crm' });
    const r = await startRun(t, key, sid, { input: userInput(script([{ tool_calls: calls }, { text: 'done' }])) });
    expect(r.status).toBe(202);
    const run = await waitForRun(t, key, r.body.run_id, isTerminal);
    expect(run.status).toBe('completed');
    return { sid, runId: r.body.run_id as string, events: await runEvents(t, key, r.body.run_id) };
  }
  const completed = (events: any[], name: string) => events.find((e) => e.type === 'tool.completed' && e.data.tool_name === name)?.data.result;
  const failed = (events: any[], name: string) => events.find((e) => e.type === 'tool.failed' && e.data.tool_name === name)?.data.error;

  let runA = '';
  it('calls carry the resolved values; echoes are stored, streamed and shown as [secret:NAME]; MCP sessions are per tenant', async () => {
    const before = rx.seen.length;
    const a = await runTools(adminA, [
      { name: 'echo_http', arguments: {} },
      { name: 'm.echo', arguments: {} },
    ]);
    runA = a.runId;
    const sent = rx.seen.slice(before);
    const httpReq = sent.find((s) => s.path === '/echo')!;
    expect(httpReq.headers['x-api-key']).toBe(A_SECRET);
    expect(httpReq.headers.authorization).toBe(`Bearer ${A_ONLY_ENV}`);
    const call = sent.find((s) => s.path === '/mcp' && s.body.includes('tools/call'))!;
    expect(call.headers['x-api-key']).toBe(A_SECRET);
    expect(call.headers.authorization).toBe(`Bearer ${SHARED_ENV}`);

    const echoed = completed(a.events, 'echo_http');
    expect(echoed.headers['x-api-key']).toBe('[secret:CRM_TOKEN]');
    expect(echoed.headers.authorization).toBe('Bearer [secret:A_ONLY_TOKEN]');
    const mcpA = completed(a.events, 'm.echo');
    expect(mcpA).toMatchObject({ key: '[secret:CRM_TOKEN]', auth: 'Bearer [secret:SHARED_TOOL_TOKEN]' });
    expect(typeof mcpA.session).toBe('string');

    const b = await runTools(adminB, [
      { name: 'echo_http', arguments: {} },
      { name: 'm.echo', arguments: {} },
    ]);
    expect(completed(b.events, 'echo_http').headers['x-api-key']).toBe('[secret:CRM_TOKEN]');
    const mcpB = completed(b.events, 'm.echo');
    // Same server URL, different tenants: never one client, never one Mcp-Session-Id.
    expect(typeof mcpB.session).toBe('string');
    expect(mcpB.session).not.toBe(mcpA.session);
    const bReq = rx.seen.slice(before).filter((s) => s.path === '/echo').at(-1)!;
    expect(bReq.headers['x-api-key']).toBe(B_SECRET);

    // Nothing the API shows holds a value: events (JSON and SSE), messages, the run.
    for (const [key, sid, runId] of [
      [adminA, a.sid, a.runId],
      [adminB, b.sid, b.runId],
    ]) {
      const texts = [
        (await t.call(key, 'GET', `/v1/runs/${runId}/events?limit=1000`)).text,
        (await t.call(key, 'GET', `/v1/sessions/${sid}/messages?limit=100`)).text,
        (await t.call(key, 'GET', `/v1/runs/${runId}`)).text,
        await (await fetch(`${t.url}/v1/runs/${runId}/events`, { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' } })).text(),
      ].join('\n');
      for (const v of [A_SECRET, B_SECRET, SHARED_ENV, A_ONLY_ENV]) expect(texts).not.toContain(v);
      expect(texts).toContain('[secret:CRM_TOKEN]');
    }
  });

  it('rotation takes effect on the next call; after delete the call fails without a request', async () => {
    const rot = await t.call(adminA, 'PUT', '/v1/secrets/CRM_TOKEN', { value: A_SECRET_2 });
    expect(rot.status).toBe(200);
    expect(rot.body.version).toBe(2);
    expect(rot.text).not.toContain(A_SECRET_2);
    let before = rx.seen.length;
    const r = await runTools(adminA, [{ name: 'echo_http', arguments: {} }]);
    expect(rx.seen.slice(before).find((s) => s.path === '/echo')!.headers['x-api-key']).toBe(A_SECRET_2);
    expect(completed(r.events, 'echo_http').headers['x-api-key']).toBe('[secret:CRM_TOKEN]');

    expect((await t.call(adminA, 'DELETE', '/v1/secrets/CRM_TOKEN')).status).toBe(204);
    before = rx.seen.length;
    const gone = await runTools(adminA, [{ name: 'echo_http', arguments: {} }]);
    expect(failed(gone.events, 'echo_http')).toMatchObject({ code: 'tool_failed', retryable: false, message: `echo_http: the header X-Api-Key ${SECRET_UNAVAILABLE}` });
    expect(rx.seen.slice(before).filter((s) => s.path === '/echo')).toHaveLength(0);
    // B's secret of the same name is untouched.
    const b = await runTools(adminB, [{ name: 'echo_http', arguments: {} }]);
    expect(completed(b.events, 'echo_http').headers['x-api-key']).toBe('[secret:CRM_TOKEN]');
  });

  it('no request the service made carried a configuration value', () => {
    expect(rx.seen.length).toBeGreaterThan(5);
    const all = rx.seen.map((s) => JSON.stringify(s.headers) + '\n' + s.body).join('\n');
    for (const v of configValues()) expect(all.includes(v) ? v : null).toBeNull();
  });

  it('no row of any table holds a secret value or its bytes; pg_dump neither (PostgreSQL)', async () => {
    expect(runA).not.toBe('');
    const ds = t.app.get(DataSource);
    const tables: Array<{ name: string }> = await ds.query(`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`);
    expect(tables.map((x) => x.name)).toEqual(expect.arrayContaining(['tenant_secrets', 'run_events', 'messages', 'audit_records']));
    const values = [A_SECRET, A_SECRET_2, B_SECRET, SHARED_ENV, A_ONLY_ENV];
    const needles = values.flatMap((v) => [v, Buffer.from(v).toString('hex'), Buffer.from(v).toString('base64')]);
    for (const { name } of tables) {
      const rows: Array<{ t: string }> = await ds.query(`SELECT x::text AS t FROM "${name}" x`);
      const text = rows.map((r) => r.t).join('\n');
      for (const n of needles) expect({ table: name, found: text.includes(n) ? n : null }).toEqual({ table: name, found: null });
    }
    const secretRows: Array<{ n: number }> = await ds.query(`SELECT count(*)::int AS n FROM tenant_secrets`);
    expect(secretRows[0].n).toBeGreaterThanOrEqual(1);
    if (t.databaseUrl !== 'embedded') {
      const dump = execFileSync('pg_dump', ['--data-only', t.databaseUrl], { maxBuffer: 512 * 1024 * 1024 }).toString('utf8');
      expect(dump).toContain('tenant_secrets');
      for (const n of needles) expect(dump.includes(n) ? n : null).toBeNull();
    }
  });
});
