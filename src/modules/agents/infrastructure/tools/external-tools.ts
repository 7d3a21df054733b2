import { createHash } from 'node:crypto';
import { Injectable, Logger, OnModuleDestroy, Optional } from '@nestjs/common';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DEFAULT_MAX_BODY_BYTES, OutboundError, OutboundHttpClient } from '../../../../common/outbound/outbound-http';
import { AgentTool, McpToolEntry, ToolBinding } from '../../domain/agent-definition';
import { ToolContext, ToolOutcome } from '../../domain/tool';
import { HeaderSecrets, SECRET_UNAVAILABLE } from './secret-headers';
import { SecretScrubber } from '../../../../common/secrets/secret-scrubber';
import { AppConfig } from '../../../../common/config/app-config';

const DEFAULT_TIMEOUT_MS = 30_000;
const SNIPPET = 500;

type HttpBinding = Extract<ToolBinding, { kind: 'http' }>;
type McpBinding = Extract<ToolBinding, { kind: 'mcp' }>;

/** One call with its headers' secrets resolved (`headers`) and the call's scrubber (`r`). */
interface PreparedCall {
  tool: AgentTool;
  args: unknown;
  ctx: ToolContext;
  deadline: number;
  headers: Record<string, string>;
  r: SecretScrubber;
}

const fail = (code: 'tool_failed' | 'tool_timeout' | 'too_large', message: string, retryable: boolean): ToolOutcome => ({ ok: false, error: { code, message, retryable } });

/** An excerpt of a tool's text: the call's resolved secrets masked FIRST, then cut (a value's start at the cut is masked too). */
function snippet(r: SecretScrubber, text: string, max = SNIPPET): string {
  return r.cut(text, max);
}

function asResult(v: unknown): unknown {
  return v !== null && typeof v === 'object' ? v : { value: v };
}

/**
 * The outcome with the call's resolved secret values masked (the run's scrubbing step masks every
 * value the run resolved again, before the decider sees it).
 */
function redacted(r: SecretScrubber, outcome: ToolOutcome): ToolOutcome {
  if (r.empty) return outcome;
  return outcome.ok ? { ...outcome, result: r.json(outcome.result) } : { ok: false, error: { ...outcome.error, message: r.text(outcome.error.message) } };
}

/**
 * What was wrong when an MCP server's answer is not the protocol (the SDK throws a SyntaxError for
 * a body that is not JSON and a ZodError for a message or result of the wrong shape); null for
 * other errors. Not retried: the same server gives the same answer.
 */
export function mcpProtocolProblem(err: unknown, r: SecretScrubber = SecretScrubber.none): string | null {
  // By name: fetch's body parser throws from its own realm (instanceof fails across realms).
  if ((err as Error)?.name === 'SyntaxError') return `answered with a body that is not JSON (${snippet(r, String((err as Error).message), 120)})`;
  const issues = (err as { issues?: unknown })?.issues;
  if ((err as Error)?.name === 'ZodError' || Array.isArray(issues)) {
    const first = Array.isArray(issues) ? (issues[0] as { path?: unknown[]; message?: string } | undefined) : undefined;
    const where = first?.path?.length ? ` at ${first.path.join('.')}` : '';
    return `answered a message that is not valid MCP/JSON-RPC${r.text(where)}${first?.message ? `: ${snippet(r, first.message, 200)}` : ''}`;
  }
  return null;
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
  /**
   * One MCP client (connection + session) per tenant, server URL and header set, reused by that
   * tenant's runs on this node: two tenants naming the same server never share a client or an
   * `Mcp-Session-Id` (CONTRACT section 13).
   */
  private readonly clients = new Map<string, Promise<Client>>();

  constructor(
    private readonly outbound: OutboundHttpClient,
    private readonly secrets: HeaderSecrets,
    @Optional() private readonly config?: AppConfig,
  ) {}

  /** The absolute URL a callback tool posts its result to (`PUBLIC_BASE_URL`). */
  private callbackUrl(ctx: ToolContext): string {
    const base = this.config?.publicBaseUrl ?? 'http://127.0.0.1:3000';
    return `${base}/v1/runs/${encodeURIComponent(ctx.runId)}/callbacks/${encodeURIComponent(ctx.toolCallId)}`;
  }

  async callHttp(tool: AgentTool, b: HttpBinding, args: unknown, ctx: ToolContext, deadline: number): Promise<ToolOutcome> {
    return this.withSecrets(tool, b.headers, ctx, (headers, r) => this.postHttp(b, { tool, args, ctx, deadline, headers, r }));
  }

  /**
   * A call with its headers' secrets resolved: recorded for the run BEFORE the request goes out
   * (whatever comes back later, on any node, is scrubbed of them), and the outcome masked.
   */
  private async withSecrets(
    tool: AgentTool,
    configured: Record<string, string>,
    ctx: ToolContext,
    call: (headers: Record<string, string>, r: SecretScrubber) => Promise<ToolOutcome>,
  ): Promise<ToolOutcome> {
    const h = await this.secrets.resolve(ctx.tenantId, configured);
    if ('unavailable' in h) return fail('tool_failed', `${tool.name}: the header ${h.unavailable} ${SECRET_UNAVAILABLE}`, false);
    if (h.resolved.length && ctx.secretsResolved) await ctx.secretsResolved(h.resolved);
    return redacted(h.redactor, await call(h.headers, h.redactor));
  }

  private async postHttp(b: HttpBinding, { tool, args, ctx, deadline, headers, r }: PreparedCall): Promise<ToolOutcome> {
    const callbackUrl = ctx.callbackToken ? this.callbackUrl(ctx) : null;
    const timeoutMs = Math.max(1, deadline - Date.now());
    try {
      const res = await this.outbound.request({
        url: b.url,
        method: 'POST',
        headers: {
          ...headers,
          'content-type': 'application/json',
          accept: 'application/json',
          'idempotency-key': ctx.idempotencyKey,
          // The tool may answer later: 202 {"callback": true}, then POST /v1/runs/{run_id}/callbacks/{tool_call_id} with this token.
          ...(ctx.callbackToken ? { 'callback-token': ctx.callbackToken, 'callback-url': callbackUrl! } : {}),
        },
        body: JSON.stringify({ arguments: args, run_id: ctx.runId, tool_call_id: ctx.toolCallId, session_id: ctx.sessionId, ...(callbackUrl ? { callback_url: callbackUrl } : {}) }),
        timeoutMs,
        signal: ctx.signal,
      });
      if (res.status >= 200 && res.status < 300) {
        try {
          const body: unknown = res.body.length ? JSON.parse(res.body.toString('utf8')) : null;
          // Accepted, the result comes by callback (CONTRACT 17): only when the call carried a token.
          if (res.status === 202 && ctx.callbackToken && (body as { callback?: unknown } | null)?.callback === true) return { ok: true, result: { callback: true }, deferred: true };
          return { ok: true, result: asResult(body) };
        } catch {
          return fail('tool_failed', `${tool.name} answered HTTP ${res.status} with a body that is not JSON: ${snippet(r, res.body.toString('utf8'))}`, false);
        }
      }
      if (res.status >= 500) return fail('tool_failed', `${tool.name} answered HTTP ${res.status}: ${snippet(r, res.body.toString('utf8'))}`, true);
      if (res.status >= 300 && res.status < 400) return fail('tool_failed', `${tool.name} answered a redirect (HTTP ${res.status}); redirects are not followed`, false);
      return fail('tool_failed', `${tool.name} answered HTTP ${res.status}: ${snippet(r, res.body.toString('utf8'))}`, false);
    } catch (err) {
      return this.outboundFailure(tool.name, err, timeoutMs);
    }
  }

  async callMcp(tool: AgentTool, b: McpBinding, args: unknown, ctx: ToolContext, deadline: number): Promise<ToolOutcome> {
    return this.withSecrets(tool, b.headers, ctx, (headers, r) => this.postMcp(b, { tool, args, ctx, deadline, headers, r }));
  }

  private async postMcp(b: McpBinding, { tool, args, ctx, deadline, headers, r }: PreparedCall): Promise<ToolOutcome> {
    if (!this.outbound.policy.allows(b.url)) return fail('tool_failed', `${tool.name}: the URL is not in OUTBOUND_URL_ALLOWLIST`, false);
    const timeoutMs = Math.max(1, deadline - Date.now());
    // Ended early when an answer of this client's server passes the cap (the SDK only logs SSE stream errors).
    const capped = new AbortController();
    const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(timeoutMs), capped.signal]);
    const key = this.clientKey(ctx.tenantId, b.url, headers);
    this.inFlight(key).add(capped);
    try {
      const client = await this.client(key, b.url, headers, signal);
      const res = await client.callTool(
        { name: b.tool, arguments: args as Record<string, unknown>, _meta: { idempotency_key: ctx.idempotencyKey } },
        undefined,
        { signal, timeout: timeoutMs },
      );
      if (res.isError) {
        // The parts masked together (a value split across two parts), then joined, then cut.
        const texts = Array.isArray(res.content) ? res.content.map((c: any) => (c?.type === 'text' && typeof c.text === 'string' ? c.text : '')) : [];
        const text = r.parts(texts).join('\n');
        return fail('tool_failed', `${tool.name}: ${snippet(r, text) || 'the tool reported an error'}`, false);
      }
      return { ok: true, result: asResult(res.structuredContent ?? { content: res.content ?? [] }) };
    } catch (err) {
      if (capped.signal.aborted || (err instanceof OutboundError && err.kind === 'too_large')) {
        this.evict(key);
        return fail('too_large', `${tool.name}: the MCP server ${b.server} answered more than ${DEFAULT_MAX_BODY_BYTES} bytes (1 MiB) in one message`, false);
      }
      if (signal.aborted) {
        if (ctx.signal.aborted) return fail('tool_timeout', `${tool.name} was cancelled`, false);
        return fail('tool_timeout', `${tool.name} timed out after ${timeoutMs} ms`, true);
      }
      const code = (err as { code?: unknown })?.code;
      // A JSON-RPC error of the server (unknown tool, invalid params): its answer, not an outage.
      if (typeof code === 'number' && code < 0 && code > -32800 && code !== -32001 && code !== -32000) return fail('tool_failed', `${tool.name}: ${snippet(r, (err as Error).message)}`, false);
      this.evict(key);
      if (err instanceof OutboundError && err.kind === 'not_allowed') return fail('tool_failed', `${tool.name}: the URL is not in OUTBOUND_URL_ALLOWLIST`, false);
      const protocol = mcpProtocolProblem(err, r);
      if (protocol) return fail('tool_failed', `${tool.name}: the MCP server ${b.server} ${protocol}`, false);
      // An HTTP status from the transport: 4xx is the server's answer (not retried), 5xx an outage.
      if (typeof code === 'number' && code >= 400 && code < 500 && code !== 408 && code !== 429) {
        return fail('tool_failed', `${tool.name}: the MCP server ${b.server} answered HTTP ${code}`, false);
      }
      if (typeof code === 'number' && code >= 500 && code < 600) return fail('tool_failed', `${tool.name}: the MCP server ${b.server} answered HTTP ${code}`, true);
      return fail('tool_failed', `${tool.name}: the MCP server ${b.server} could not be reached`, true);
    } finally {
      this.inFlight(key).delete(capped);
    }
  }

  /** The calls waiting on a pooled client, to end when one of its answers passes the cap. */
  private readonly waiting = new Map<string, Set<AbortController>>();

  private inFlight(key: string): Set<AbortController> {
    let set = this.waiting.get(key);
    if (!set) this.waiting.set(key, (set = new Set()));
    return set;
  }

  /**
   * `tools/list` of a server entry (all pages), filtered by the entry's `tools`, as `tenantId`'s
   * client (null: a shared file agent). Throws on failure. Secret values a server echoes in names,
   * descriptions or schemas are masked: the list is stored with the agent version.
   */
  async listMcp(entry: McpToolEntry, tenantId: string | null, timeoutMs = 10_000): Promise<ListedMcpTool[]> {
    const h = await this.secrets.resolve(tenantId, entry.headers ?? {});
    if ('unavailable' in h) throw new Error(`the header ${h.unavailable} ${SECRET_UNAVAILABLE}`);
    return h.redactor.json(await this.listMcpWith(entry, tenantId, h.headers, timeoutMs));
  }

  private async listMcpWith(entry: McpToolEntry, tenantId: string | null, headers: Record<string, string>, timeoutMs: number): Promise<ListedMcpTool[]> {
    const signal = AbortSignal.timeout(timeoutMs);
    const key = this.clientKey(tenantId, entry.url, headers);
    try {
      const client = await this.client(key, entry.url, headers, signal);
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

  /** The key of a pooled client: the tenant, the URL and a hash of the resolved headers (the secrets never leave memory). */
  private clientKey(tenantId: string | null, url: string, headers: Record<string, string>): string {
    const hash = createHash('sha256').update(JSON.stringify([tenantId, url, Object.entries(headers).sort()])).digest('hex');
    return `${tenantId ?? ''}#${url}#${hash}`;
  }

  private client(key: string, url: string, headers: Record<string, string>, signal: AbortSignal): Promise<Client> {
    let p = this.clients.get(key);
    if (!p) {
      p = (async () => {
        const client = new Client({ name: 'agent-api', version: '1.0.0' });
        const onTooLarge = (err: OutboundError) => {
          for (const c of this.waiting.get(key) ?? []) c.abort(err);
        };
        const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: this.outbound.fetch({ onTooLarge }), requestInit: { headers } });
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
          return fail('too_large', `${name}: ${err.message}`, false);
        case 'network':
          return fail('tool_failed', `${name}: the tool server could not be reached`, true);
      }
    }
    this.logger.error(`http tool ${name} failed unexpectedly: ${(err as Error)?.message ?? String(err)}`);
    return fail('tool_failed', `${name} failed unexpectedly`, true);
  }
}
