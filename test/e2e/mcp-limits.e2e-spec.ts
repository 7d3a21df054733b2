import { createServer, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { createSession, isTerminal, runEvents, script, startRun, userInput, waitForRun } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * An MCP server that breaks the rules on purpose (issue #31 items 3 and 5), written by hand over
 * Streamable HTTP (JSON responses) so it can answer what the SDK's server never would: 10 MB
 * answers (declared, chunked, one SSE event), bodies that are not JSON, messages that are not
 * JSON-RPC, results of the wrong shape. Every tool is idempotent, so a retryable failure would be
 * retried: the call counts show which were not.
 */
const TEN_MB = 10 * 1024 * 1024;
const X = 'x'.repeat(TEN_MB);
const TOOLS = ['big', 'big_chunked', 'big_sse', 'garbage', 'not_jsonrpc', 'bad_result', 'ok'];

async function startBadMcp() {
  const calls = new Map<string, number>();
  const json = (res: ServerResponse, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const msg = JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null');
    if (msg?.id === undefined && msg?.method) return void res.writeHead(202).end(); // a notification
    const reply = (result: unknown) => json(res, { jsonrpc: '2.0', id: msg.id, result });
    if (msg.method === 'initialize') return reply({ protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'bad', version: '1' } });
    if (msg.method === 'tools/list') return reply({ tools: TOOLS.map((name) => ({ name, inputSchema: { type: 'object' } })) });
    if (msg.method !== 'tools/call') return json(res, { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'no' } });
    const name = msg.params.name as string;
    calls.set(name, (calls.get(name) ?? 0) + 1);
    // The 10 MB text is made once (X): what this server allocates per call stays small, so the
    // RSS the test measures is the service's.
    const head = `{"jsonrpc":"2.0","id":${JSON.stringify(msg.id)},"result":{"content":[{"type":"text","text":"`;
    const tail = '"}]}}';
    const send = async (prefix: string, suffix: string) => {
      res.write(prefix + head);
      for (let i = 0; i < X.length; i += 64 * 1024) {
        if (res.destroyed) return;
        if (!res.write(X.slice(i, i + 64 * 1024))) await new Promise((r) => res.once('drain', r));
      }
      res.end(tail + suffix);
    };
    switch (name) {
      case 'big':
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': head.length + X.length + tail.length });
        return send('', '');
      case 'big_chunked':
        res.writeHead(200, { 'content-type': 'application/json' });
        return send('', '');
      case 'big_sse':
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        return send('event: message\ndata: ', '\n\n');
      case 'garbage':
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end('{"jsonrpc": "2.0", this is not json');
      case 'not_jsonrpc':
        return json(res, { hello: 'world' });
      case 'bad_result':
        return reply({ content: 'not an array' });
      default:
        return reply({ content: [{ type: 'text', text: 'fine' }], structuredContent: { fine: true } });
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    calls,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe('MCP answers: caps and protocol errors', () => {
  let t: TestApp;
  let mcp: Awaited<ReturnType<typeof startBadMcp>>;
  const admin = KEYS.adminA;

  beforeAll(async () => {
    mcp = await startBadMcp();
    t = await startTestApp();
    const r = await t.call(admin, 'POST', '/v1/agents', { id: 'bad_mcp', tools: [{ type: 'mcp', server: 'bad', url: mcp.url, idempotent: true, timeout_ms: 20_000 }] });
    expect(r.status).toBe(201);
  });
  afterAll(async () => {
    await t?.close();
    await mcp?.close();
  });

  async function callTool(name: string) {
    const sid = await createSession(t, admin, { agent_id: 'bad_mcp' });
    const r = await startRun(t, admin, sid, { input: userInput(script([{ tool_calls: [{ name: `bad.${name}`, arguments: {} }] }, { text: 'done' }])) });
    expect(r.status).toBe(202);
    const run = await waitForRun(t, admin, r.body.run_id, isTerminal, 60_000);
    expect(run.status).toBe('completed');
    const events = await runEvents(t, admin, r.body.run_id);
    return { events, failed: events.find((e) => e.type === 'tool.failed')?.data, completed: events.find((e) => e.type === 'tool.completed')?.data };
  }

  it('a 10 MB answer is too_large "more than 1 MiB" (declared, chunked, one SSE event), the code http tools use, not retried, memory bounded, nothing of it stored', async () => {
    // One small call first: the first run of a fresh app compiles and caches code paths (the
    // agent's pinned configuration, the MCP client, statement caches) and that growth is not
    // the answers'. CI saw 21 MB on an idle PostgreSQL run without this warm-up.
    expect((await callTool('ok')).completed).toBeDefined();
    (global as { gc?: () => void }).gc?.();
    // The peak resident set (maxRSS, KiB) is what a flood of big answers would push up.
    // Uncapped, each answer alone is 10 MB of body, 10 MB of decoded text and a parsed copy.
    const peak0 = process.resourceUsage().maxRSS;
    const started = Date.now();
    for (const name of ['big', 'big_chunked', 'big_sse']) {
      const { events, failed } = await callTool(name);
      expect({ name, failed }).toMatchObject({ name, failed: { tool_name: `bad.${name}`, error: { code: 'too_large', retryable: false } } });
      expect(failed.error.message).toMatch(/more than 1048576 bytes \(1 MiB\)/);
      expect(mcp.calls.get(name)).toBe(1);
      expect(JSON.stringify(events).length).toBeLessThan(64 * 1024);
    }
    (global as { gc?: () => void }).gc?.();
    const growthMb = (process.resourceUsage().maxRSS - peak0) / 1024;
    console.log(`MCP 10 MB answers x3: peak RSS growth ${growthMb.toFixed(1)} MB, ${Date.now() - started} ms`);
    // The bound: what the cap leaves (0 MB alone; the peak of a jest process that ran 100 suites
    // first moves by up to ~21 MB on its own, seen in full runs on both databases). Uncapped, the
    // answers are not tool_failed at all (the assertions above fail first).
    expect(growthMb).toBeLessThan(30);
    // The session's history holds no 10 MB text either.
    const sizes: Array<{ n: string }> = await t.app.get(require('typeorm').DataSource).query(`SELECT coalesce(max(length(content::text)), 0)::text AS n FROM messages`);
    expect(Number(sizes[0].n)).toBeLessThan(64 * 1024);
  });

  it.each([
    ['garbage', /not JSON/],
    ['not_jsonrpc', /not valid MCP\/JSON-RPC/],
    ['bad_result', /not valid MCP\/JSON-RPC at content/],
  ])('%s: a protocol error is tool_failed, not retryable, and says what was wrong', async (name, message) => {
    const { failed } = await callTool(name);
    expect(failed).toMatchObject({ error: { code: 'tool_failed', retryable: false } });
    expect(failed.error.message).toMatch(message);
    expect(failed.error.message).not.toMatch(/could not be reached/);
    expect(mcp.calls.get(name)).toBe(1);
  });

  it('the server still works for a well-formed call afterwards', async () => {
    const { completed } = await callTool('ok');
    expect(completed.result).toEqual({ fine: true });
  });
});
