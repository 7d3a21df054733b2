import { createHash } from 'node:crypto';
import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { OutboundError, OutboundHttpClient } from '../../../../common/outbound/outbound-http';
import { AgentTool, McpToolEntry, ToolBinding } from '../../domain/agent-definition';
import { ToolContext, ToolOutcome } from '../../domain/tool';
import { resolveHeaders } from './secret-headers';

const DEFAULT_TIMEOUT_MS = 30_000;
const SNIPPET = 500;

type HttpBinding = Extract<ToolBinding, { kind: 'http' }>;
type McpBinding = Extract<ToolBinding, { kind: 'mcp' }>;

const fail = (code: 'tool_failed' | 'tool_timeout', message: string, retryable: boolean): ToolOutcome => ({ ok: false, error: { code, message, retryable } });

function snippet(body: Buffer): string {
  const s = body.toString('utf8');
  return s.length > SNIPPET ? `${s.slice(0, SNIPPET)}...` : s;
}

function asResult(v: unknown): unknown {
  return v !== null && typeof v === 'object' ? v : { value: v };
}

/** A tool listed by an MCP server, as `tools/list` gave it. */
export interface ListedMcpTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/**
 * The executors of `http` and `mcp` tools (CONTRACT section 13), through the one guarded outbound
 * client. They never throw: every failure is an outcome (`retryable` for 5xx, connection errors
 * and timeouts; the decider retries those only for idempotent tools).
 */
@Injectable()
export class ExternalTools implements OnModuleDestroy {
  private readonly logger = new Logger('Tools');
  /** One MCP client (connection + session) per server URL and header set, reused by every run on this node. */
  private readonly clients = new Map<string, Promise<Client>>();

  constructor(private readonly outbound: OutboundHttpClient) {}

  async callHttp(tool: AgentTool, b: HttpBinding, args: unknown, ctx: ToolContext, deadline: number): Promise<ToolOutcome> {
    const h = resolveHeaders(b.headers);
    if ('missing' in h) return fail('tool_failed', `${tool.name}: the secret \${env:${h.missing}} is not set on the server`, false);
    const timeoutMs = Math.max(1, deadline - Date.now());
    try {
      const res = await this.outbound.request({
        url: b.url,
        method: 'POST',
        headers: { ...h.headers, 'content-type': 'application/json', accept: 'application/json', 'idempotency-key': ctx.idempotencyKey },
        body: JSON.stringify({ arguments: args, run_id: ctx.runId, tool_call_id: ctx.toolCallId, session_id: ctx.sessionId }),
        timeoutMs,
        signal: ctx.signal,
      });
      if (res.status >= 200 && res.status < 300) {
        try {
          return { ok: true, result: asResult(res.body.length ? JSON.parse(res.body.toString('utf8')) : null) };
        } catch {
          return fail('tool_failed', `${tool.name} answered HTTP ${res.status} with a body that is not JSON: ${snippet(res.body)}`, false);
        }
      }
      if (res.status >= 500) return fail('tool_failed', `${tool.name} answered HTTP ${res.status}: ${snippet(res.body)}`, true);
      if (res.status >= 300 && res.status < 400) return fail('tool_failed', `${tool.name} answered a redirect (HTTP ${res.status}); redirects are not followed`, false);
      return fail('tool_failed', `${tool.name} answered HTTP ${res.status}: ${snippet(res.body)}`, false);
    } catch (err) {
      return this.outboundFailure(tool.name, err, timeoutMs);
    }
  }

  async callMcp(tool: AgentTool, b: McpBinding, args: unknown, ctx: ToolContext, deadline: number): Promise<ToolOutcome> {
    const h = resolveHeaders(b.headers);
    if ('missing' in h) return fail('tool_failed', `${tool.name}: the secret \${env:${h.missing}} is not set on the server`, false);
    if (!this.outbound.policy.allows(b.url)) return fail('tool_failed', `${tool.name}: the URL is not in OUTBOUND_URL_ALLOWLIST`, false);
    const timeoutMs = Math.max(1, deadline - Date.now());
    const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(timeoutMs)]);
    const key = this.clientKey(b.url, h.headers);
    try {
      const client = await this.client(key, b.url, h.headers, signal);
      const res = await client.callTool(
        { name: b.tool, arguments: args as Record<string, unknown>, _meta: { idempotency_key: ctx.idempotencyKey } },
        undefined,
        { signal, timeout: timeoutMs },
      );
      if (res.isError) {
        const text = Array.isArray(res.content) ? res.content.map((c: any) => (c?.type === 'text' ? c.text : '')).join('\n') : '';
        return fail('tool_failed', `${tool.name}: ${text.slice(0, SNIPPET) || 'the tool reported an error'}`, false);
      }
      return { ok: true, result: asResult(res.structuredContent ?? { content: res.content ?? [] }) };
    } catch (err) {
      if (signal.aborted) {
        if (ctx.signal.aborted) return fail('tool_timeout', `${tool.name} was cancelled`, false);
        return fail('tool_timeout', `${tool.name} timed out after ${timeoutMs} ms`, true);
      }
      const code = (err as { code?: unknown })?.code;
      // A JSON-RPC error of the server (unknown tool, invalid params): its answer, not an outage.
      if (typeof code === 'number' && code < 0 && code > -32800 && code !== -32001) return fail('tool_failed', `${tool.name}: ${(err as Error).message.slice(0, SNIPPET)}`, false);
      this.evict(key);
      if (err instanceof OutboundError && err.kind === 'not_allowed') return fail('tool_failed', `${tool.name}: the URL is not in OUTBOUND_URL_ALLOWLIST`, false);
      return fail('tool_failed', `${tool.name}: the MCP server ${b.server} could not be reached`, true);
    }
  }

  /** `tools/list` of a server entry (all pages), filtered by the entry's `tools`. Throws on failure. */
  async listMcp(entry: McpToolEntry, timeoutMs = 10_000): Promise<ListedMcpTool[]> {
    const h = resolveHeaders(entry.headers ?? {});
    if ('missing' in h) throw new Error(`the secret \${env:${h.missing}} is not set on the server`);
    const signal = AbortSignal.timeout(timeoutMs);
    const key = this.clientKey(entry.url, h.headers);
    try {
      const client = await this.client(key, entry.url, h.headers, signal);
      const out: ListedMcpTool[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 50; page++) {
        const res = await client.listTools(cursor ? { cursor } : undefined, { signal, timeout: timeoutMs });
        for (const t of res.tools) out.push({ name: t.name, description: t.description ?? '', inputSchema: (t.inputSchema as Record<string, unknown>) ?? { type: 'object' } });
        cursor = res.nextCursor;
        if (!cursor) break;
      }
      const wanted = entry.tools === undefined || entry.tools === '*' ? null : new Set(entry.tools);
      return wanted ? out.filter((t) => wanted.has(t.name)) : out;
    } catch (err) {
      this.evict(key);
      throw err;
    }
  }

  async onModuleDestroy(): Promise<void> {
    const all = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(all.map((p) => p.then((c) => c.close()).catch(() => undefined)));
  }

  /** The key of a pooled client: the URL and a hash of the resolved headers (the secrets never leave memory). */
  private clientKey(url: string, headers: Record<string, string>): string {
    return `${url}#${createHash('sha256').update(JSON.stringify(Object.entries(headers).sort())).digest('hex')}`;
  }

  private client(key: string, url: string, headers: Record<string, string>, signal: AbortSignal): Promise<Client> {
    let p = this.clients.get(key);
    if (!p) {
      p = (async () => {
        const client = new Client({ name: 'agent-api', version: '1.0.0' });
        const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: this.outbound.fetch(), requestInit: { headers } });
        await client.connect(transport, { signal, timeout: Math.max(1, DEFAULT_TIMEOUT_MS) });
        client.onclose = () => {
          if (this.clients.get(key) === p) this.clients.delete(key);
        };
        return client;
      })();
      this.clients.set(key, p);
      p.catch(() => this.evict(key));
    }
    return p;
  }

  private evict(key: string): void {
    const p = this.clients.get(key);
    if (!p) return;
    this.clients.delete(key);
    p.then((c) => c.close()).catch(() => undefined);
  }

  private outboundFailure(name: string, err: unknown, timeoutMs: number): ToolOutcome {
    if (err instanceof OutboundError) {
      switch (err.kind) {
        case 'timeout':
          return fail('tool_timeout', `${name} timed out after ${timeoutMs} ms`, true);
        case 'aborted':
          return fail('tool_timeout', `${name} was cancelled`, false);
        case 'not_allowed':
          return fail('tool_failed', `${name}: the URL is not in OUTBOUND_URL_ALLOWLIST`, false);
        case 'too_large':
          return fail('tool_failed', `${name}: ${err.message}`, false);
        case 'network':
          return fail('tool_failed', `${name}: the tool server could not be reached`, true);
      }
    }
    this.logger.error(`http tool ${name} failed unexpectedly: ${(err as Error)?.message ?? String(err)}`);
    return fail('tool_failed', `${name} failed unexpectedly`, true);
  }
}
