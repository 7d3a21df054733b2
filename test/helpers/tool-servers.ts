import { createServer, IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

export interface SeenRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function listen(server: HttpServer): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/**
 * A real HTTP tool server: `/quote` answers JSON (one effect per Idempotency-Key), `/garbage` a
 * body that is not JSON, `/bad` a 400, `/boom` a 500, `/hang` never.
 */
export async function startHttpToolServer() {
  const seen: SeenRequest[] = [];
  const effects = new Map<string, number>();
  let aborted = 0;
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const text = await readBody(req);
    let body: any = null;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    const path = req.url ?? '/';
    seen.push({ path, headers: req.headers, body });
    const send = (status: number, payload: string, type = 'application/json') => {
      res.writeHead(status, { 'content-type': type });
      res.end(payload);
    };
    switch (path) {
      case '/quote': {
        const key = String(req.headers['idempotency-key'] ?? '');
        effects.set(key, (effects.get(key) ?? 0) + 1);
        return send(200, JSON.stringify({ sku: body?.arguments?.sku, price_cents: 4200, quote_id: `Q-${key.length}` }));
      }
      case '/once': {
        // An idempotent effect keyed by Idempotency-Key: the first request applies it and answers
        // slowly (a caller may die meanwhile); a repeat with the same key only answers.
        const key = String(req.headers['idempotency-key'] ?? '');
        if (effects.has(key)) return send(200, JSON.stringify({ applied: false, key }));
        effects.set(key, 1);
        setTimeout(() => {
          if (!res.writableEnded && !res.destroyed) send(200, JSON.stringify({ applied: true, key }));
        }, 6000).unref();
        return;
      }
      case '/garbage':
        return send(200, '<html>not json at all', 'text/html');
      case '/huge':
        // Past the 1 MiB cap every tool answer has.
        return send(200, JSON.stringify({ blob: 'x'.repeat(2 * 1024 * 1024) }));
      case '/bad':
        return send(400, JSON.stringify({ error: 'sku unknown' }));
      case '/boom':
        return send(503, 'overloaded', 'text/plain');
      case '/hang':
        req.socket.on('close', () => aborted++);
        return; // never answers
      default:
        return send(404, '{}');
    }
  });
  const url = await listen(server);
  return {
    url,
    seen,
    effects,
    aborted: () => aborted,
    close: () => new Promise<void>((r) => server.close(() => r())).then(() => undefined),
    closeAll: () => server.closeAllConnections(),
  };
}

/**
 * A real MCP server (the SDK's low-level Server over the Streamable HTTP transport, stateless:
 * one server and transport per request) on loopback: `lookup` {email}, `refund` {order_id},
 * `fail` (isError) and `hang` (never answers).
 */
export async function startMcpServer() {
  const calls: Array<{ name: string; arguments: any; meta: any }> = [];
  const requests: Array<{ method: string; headers: IncomingMessage['headers'] }> = [];
  const tools = [
    { name: 'lookup', description: 'Looks a customer up by e-mail.', inputSchema: { type: 'object', properties: { email: { type: 'string', minLength: 3 } }, required: ['email'], additionalProperties: false } },
    { name: 'refund', description: 'Refunds an order.', inputSchema: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] } },
    { name: 'fail', description: 'Always reports an error.', inputSchema: { type: 'object', properties: {} } },
    { name: 'hang', description: 'Never answers.', inputSchema: { type: 'object', properties: {} } },
    { name: 'slow', description: 'Answers after 6 s.', inputSchema: { type: 'object', properties: {} } },
  ];
  const build = () => {
    const s = new Server({ name: 'test-crm', version: '1.0.0' }, { capabilities: { tools: {} } });
    s.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
    s.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const { name, arguments: args, _meta } = request.params as any;
      calls.push({ name, arguments: args, meta: _meta });
      switch (name) {
        case 'lookup':
          return { content: [{ type: 'text', text: `customer ${args.email}: Ada Lovelace` }], structuredContent: { email: args.email, name: 'Ada Lovelace', tier: 'gold' } };
        case 'refund':
          return { content: [{ type: 'text', text: 'refunded' }], structuredContent: { refund_id: `R-${args.order_id}`, idempotency_key: _meta?.idempotency_key ?? null } };
        case 'fail':
          return { content: [{ type: 'text', text: 'the CRM is read-only today' }], isError: true };
        case 'slow':
          await new Promise<void>((r) => setTimeout(r, 6000).unref());
          return { content: [{ type: 'text', text: 'slow done' }] };
        case 'hang':
          await new Promise<void>((r) => {
            extra.signal.addEventListener('abort', () => r());
            setTimeout(r, 60_000).unref();
          });
          return { content: [] };
        default:
          throw new Error(`unknown tool ${name}`);
      }
    });
    return s;
  };
  const server = createServer(async (req, res) => {
    const text = await readBody(req);
    let body: any;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    for (const m of Array.isArray(body) ? body : body ? [body] : []) requests.push({ method: m.method, headers: req.headers });
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    const mcp = build();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      transport.close().catch(() => undefined);
      mcp.close().catch(() => undefined);
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res, body);
  });
  const base = await listen(server);
  return {
    url: `${base}/mcp`,
    calls,
    requests,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r())).then(() => undefined);
    },
  };
}
