import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { toJsonb } from '../../../common/database/jsonb';
import { DomainError, FieldError } from '../../../common/errors/domain-error';
import { OutboundHttpClient } from '../../../common/outbound/outbound-http';
import {
  AgentCatalog,
  AgentDefinition,
  AgentDirectory,
  AgentTool,
  AgentVersionInput,
  DEFAULT_MAX_CONCURRENT_SUBAGENTS,
  handoffsOf,
  handoffTool,
  subagentTools,
  HttpToolEntry,
  InlineAgentConfig,
  McpToolEntry,
  PreparedAgentVersion,
  ResolvedAgent,
  ToolEntry,
} from '../domain/agent-definition';
import { ToolRegistry, ToolRisk, ToolVisibility } from '../domain/tool';
import { parseToolEntries } from '../domain/tool-entries';
import { schemaProblem } from './tools/ajv-validator';
import { ExternalTools } from './tools/external-tools';
import { HeaderSecrets } from './tools/secret-headers';

const DEFAULT_TIMEOUT_MS = 30_000;
const ID_RE = /^[a-z0-9_-]{1,64}$/;

interface VersionRow {
  tenant_id: string;
  agent_id: string;
  version: number;
  description: string;
  model: string;
  instructions: string;
  tools: ToolEntry[];
  resolved_tools: AgentTool[];
  created_at: Date;
  deleted_at: Date | null;
}

const notFound = (id: string) => new DomainError('agent_not_found', `agent "${id}" is not configured`, { agent_id: id });
const readOnly = (id: string) => new DomainError('agent_read_only', `agent "${id}" is defined by a file and is read-only`, { agent_id: id });

/**
 * File agents (shared, read-only) and API agents (the tenant's, table `agent_versions`) as one
 * directory, with tools resolved: built-ins by name, http and function tools as defined, MCP
 * servers' tools as `tools/list` gave them when the version was created (API) or first used on
 * this node (files; retried on demand while a server is down). Versions are immutable, so a
 * resolved version is cached for good.
 */
@Injectable()
export class DefaultAgentDirectory extends AgentDirectory implements OnApplicationBootstrap {
  private readonly logger = new Logger('Agents');
  private readonly pinned = new Map<string, ResolvedAgent>();

  constructor(
    private readonly files: AgentCatalog,
    private readonly tools: ToolRegistry,
    private readonly uow: UnitOfWork,
    private readonly outbound: OutboundHttpClient,
    private readonly external: ExternalTools,
    private readonly secrets: HeaderSecrets,
  ) {
    super();
  }

  async list(tenantId: string): Promise<ResolvedAgent[]> {
    const fileAgents = await Promise.all(this.files.list().map((d) => this.resolveFile(d)));
    const rows: VersionRow[] = await this.uow.manager.query(
      `SELECT DISTINCT ON (agent_id) * FROM agent_versions WHERE tenant_id = $1 AND deleted_at IS NULL AND NOT hidden ORDER BY agent_id, version DESC`,
      [tenantId],
    );
    return [...fileAgents, ...rows.map(fromRow)].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  async find(tenantId: string, id: string): Promise<ResolvedAgent | null> {
    const file = this.files.get(id);
    if (file) return this.resolveFile(file);
    const rows: VersionRow[] = await this.uow.manager.query(
      `SELECT * FROM agent_versions WHERE tenant_id = $1 AND agent_id = $2 AND deleted_at IS NULL AND NOT hidden ORDER BY version DESC LIMIT 1`,
      [tenantId, id],
    );
    return rows.length ? this.remember(fromRow(rows[0])) : null;
  }

  async findPinned(tenantId: string, id: string, version: string): Promise<ResolvedAgent | null> {
    const file = this.files.get(id, version);
    if (file) return this.resolveFile(file);
    const hit = this.pinned.get(`${tenantId}/${id}@${version}`);
    if (hit) return hit;
    if (!/^\d{1,9}$/.test(version)) return null;
    const rows: VersionRow[] = await this.uow.manager.query(`SELECT * FROM agent_versions WHERE tenant_id = $1 AND agent_id = $2 AND version = $3`, [tenantId, id, Number(version)]);
    return rows.length ? this.remember(fromRow(rows[0])) : null;
  }

  async versions(tenantId: string, id: string): Promise<ResolvedAgent[] | null> {
    if (this.files.get(id)) {
      const out: ResolvedAgent[] = [];
      for (let v = 1; v <= Number(this.files.get(id)!.version); v++) {
        const d = this.files.get(id, String(v));
        if (d) out.push(await this.resolveFile(d));
      }
      return out;
    }
    const rows: VersionRow[] = await this.uow.manager.query(
      `SELECT * FROM agent_versions WHERE tenant_id = $1 AND agent_id = $2 AND deleted_at IS NULL AND NOT hidden ORDER BY version ASC`,
      [tenantId, id],
    );
    return rows.length ? rows.map(fromRow) : null;
  }

  async prepare(_tenantId: string, input: AgentVersionInput, first: boolean): Promise<PreparedAgentVersion> {
    if (this.files.get(input.id)) throw readOnly(input.id);
    const errors: FieldError[] = [];
    if (!first && !(await this.find(_tenantId, input.id))) throw notFound(input.id);
    if (first && !ID_RE.test(input.id)) errors.push({ field: 'id', message: 'must match [a-z0-9_-]{1,64}' });
    else if (first && input.id.startsWith('inline_')) errors.push({ field: 'id', message: 'the prefix inline_ is reserved for inline session configurations' });
    const model = input.model ?? 'scripted';
    if (!this.files.knownModels().includes(model)) errors.push({ field: 'model', message: `must be one of: ${this.files.knownModels().join(', ')}` });
    const parsed = parseToolEntries(input.tools, {
      urlAllowed: (u) => this.outbound.policy.allows(u),
      builtin: (n) => this.tools.get(n) !== null,
      schemaProblem,
    });
    errors.push(...parsed.errors);
    if (!parsed.errors.length) errors.push(...(await this.secrets.check(_tenantId, parsed.entries)));
    const handoffs = await this.resolveHandoffs(_tenantId, input.handoffs, 'handoffs', input.id, errors);
    handoffs.push(...(await this.resolveSubagents(_tenantId, input.subagents, 'subagents', input.id, errors)));
    if (errors.length) throw new DomainError('invalid_request', 'the agent definition is invalid', { errors });
    const { tools: listed, errors: listErrors } = await this.resolve(parsed.entries, _tenantId, true);
    if (listErrors.length) throw new DomainError('invalid_request', 'the agent definition is invalid', { errors: listErrors });
    const resolvedTools = [...listed, ...handoffs];
    const names = new Set<string>();
    for (const t of resolvedTools) {
      if (names.has(t.name)) throw new DomainError('invalid_request', 'the agent definition is invalid', { errors: [{ field: 'tools', message: `two tools are named "${t.name}"` }] });
      names.add(t.name);
    }
    return { id: input.id, description: input.description ?? '', model, instructions: input.instructions ?? '', entries: parsed.entries, resolvedTools };
  }

  async createVersion(tenantId: string, p: PreparedAgentVersion, first: boolean, createdBy: string): Promise<ResolvedAgent> {
    if (this.files.get(p.id)) throw readOnly(p.id);
    const input = p;

    for (let attempt = 0; attempt < 5; attempt++) {
      const rows: VersionRow[] = await this.uow.manager.query(
        `WITH cur AS (SELECT max(version) AS v, bool_or(deleted_at IS NULL) AS live FROM agent_versions WHERE tenant_id = $1 AND agent_id = $2)
         INSERT INTO agent_versions (tenant_id, agent_id, version, description, model, instructions, tools, resolved_tools, created_by, created_at)
         SELECT $1, $2, coalesce(cur.v, 0) + 1, $3, $4, $5, $6::jsonb, $7::jsonb, $8, now()
           FROM cur
          WHERE ${first ? 'cur.v IS NULL OR NOT cur.live' : 'cur.live'}
         ON CONFLICT (tenant_id, agent_id, version) DO NOTHING
         RETURNING *`,
        [tenantId, p.id, p.description, p.model, p.instructions, toJsonb(p.entries), toJsonb(p.resolvedTools), createdBy],
      );
      if (rows.length) return this.remember(fromRow(rows[0]));
      const cur: Array<{ live: boolean | null }> = await this.uow.manager.query(
        `SELECT bool_or(deleted_at IS NULL) AS live FROM agent_versions WHERE tenant_id = $1 AND agent_id = $2`,
        [tenantId, input.id],
      );
      const live = cur[0]?.live === true;
      if (first && live) {
        throw new DomainError('agent_read_only', `agent "${input.id}" exists; its versions are immutable: add one with POST /v1/agents/${input.id}/versions`, { agent_id: input.id });
      }
      if (!first && !live) throw notFound(input.id);
      // Lost a race for the next version number: try the one after.
    }
    throw new DomainError('agent_read_only', `agent "${input.id}" is being changed concurrently; try again`, { agent_id: input.id });
  }

  async remove(tenantId: string, id: string): Promise<void> {
    if (this.files.get(id)) throw readOnly(id);
    // A SELECT over the UPDATE: its rows are what it changed (TypeORM answers an UPDATE with [rows, count]).
    const rows: Array<{ n: number }> = await this.uow.manager.query(
      `WITH u AS (UPDATE agent_versions SET deleted_at = now() WHERE tenant_id = $1 AND agent_id = $2 AND deleted_at IS NULL AND NOT hidden RETURNING version)
       SELECT count(*)::int AS n FROM u`,
      [tenantId, id],
    );
    if (!rows[0] || rows[0].n === 0) throw notFound(id);
  }

  // ---------------------------------------------------------------------------------------

  async createInline(tenantId: string, subjectId: string, id: string, cfg: InlineAgentConfig): Promise<ResolvedAgent> {
    const errors: FieldError[] = [];
    const model = cfg.model ?? 'scripted';
    if (!this.files.knownModels().includes(model)) errors.push({ field: 'agent.model', message: `must be one of: ${this.files.knownModels().join(', ')}` });
    const raw = cfg.tools ?? [];
    if (Array.isArray(raw)) {
      raw.forEach((t, i) => {
        if (typeof t !== 'string' && (t === null || typeof t !== 'object' || (t as { type?: unknown }).type !== 'function')) {
          errors.push({ field: `agent.tools[${i}]`, message: 'an inline configuration takes built-in tool names and function tools only' });
        }
      });
    }
    const parsed = parseToolEntries(raw, { urlAllowed: () => false, builtin: (n) => this.tools.get(n) !== null, schemaProblem }, 'agent.tools');
    errors.push(...parsed.errors);
    const handoffs = await this.resolveHandoffs(tenantId, cfg.handoffs, 'agent.handoffs', null, errors);
    handoffs.push(...(await this.resolveSubagents(tenantId, cfg.subagents, 'agent.subagents', null, errors)));
    if (errors.length) throw new DomainError('invalid_request', 'the inline agent configuration is invalid', { errors });
    const { tools: listed } = await this.resolve(parsed.entries, tenantId, true);
    const tools = [...listed, ...handoffs];
    const rows: VersionRow[] = await this.uow.manager.query(
      `INSERT INTO agent_versions (tenant_id, agent_id, version, description, model, instructions, tools, resolved_tools, created_by, created_at, hidden)
       VALUES ($1, $2, 1, '', $3, $4, $5::jsonb, $6::jsonb, $7, now(), true) RETURNING *`,
      [tenantId, id, model, cfg.instructions ?? '', toJsonb(parsed.entries), toJsonb(tools), subjectId],
    );
    return this.remember(fromRow(rows[0]));
  }

  /** Private tools of every API agent version, for the projector (read at start-up; new ones as they are seen). */
  async onApplicationBootstrap(): Promise<void> {
    try {
      const rows: Array<{ name: string }> = await this.uow.manager.query(
        `SELECT DISTINCT t->>'name' AS name FROM agent_versions v, jsonb_array_elements(v.resolved_tools) t WHERE t->>'visibility' = 'private'`,
      );
      for (const r of rows) this.tools.notePrivateTool(r.name);
    } catch (err) {
      this.logger.warn(`could not read private agent tools: ${(err as Error).message}`);
    }
  }

  private remember(a: ResolvedAgent): ResolvedAgent {
    for (const t of a.resolvedTools) if (t.visibility === 'private') this.tools.notePrivateTool(t.name);
    if (a.tenantId) this.pinned.set(`${a.tenantId}/${a.id}@${a.version}`, a);
    return a;
  }

  /**
   * `handoffs` (CONTRACT 16): agent ids of the tenant (file agents or its live API agents), each
   * pinned at its newest version as a `transfer_to_<id>` tool; problems go to `errors` (400).
   */
  private async resolveHandoffs(tenantId: string, raw: unknown, field: string, self: string | null, errors: FieldError[]): Promise<AgentTool[]> {
    if (raw === undefined || raw === null) return [];
    if (!Array.isArray(raw) || raw.length > 32 || raw.some((x) => typeof x !== 'string')) {
      errors.push({ field, message: 'must be an array of at most 32 agent ids' });
      return [];
    }
    const out: AgentTool[] = [];
    for (const [i, id] of (raw as string[]).entries()) {
      if (id === self) errors.push({ field: `${field}[${i}]`, message: 'an agent cannot hand off to itself' });
      else if ((raw as string[]).indexOf(id) !== i) errors.push({ field: `${field}[${i}]`, message: `"${id}" is listed twice` });
      else {
        const target = ID_RE.test(id) && !id.startsWith('inline_') ? await this.find(tenantId, id) : null;
        if (!target) errors.push({ field: `${field}[${i}]`, message: `no agent "${id}" in this tenant` });
        else out.push(handoffTool(target));
      }
    }
    return out;
  }

  /**
   * `subagents: {enabled, agents?, max_concurrent?}` (CONTRACT 16): enabled, the four subagent
   * tools with `agents` pinned at their newest versions (agents of the tenant, else 400).
   */
  private async resolveSubagents(tenantId: string | null, raw: unknown, field: string, self: string | null, errors: FieldError[]): Promise<AgentTool[]> {
    if (raw === undefined || raw === null) return [];
    const cfg = raw as { enabled?: unknown; agents?: unknown; max_concurrent?: unknown };
    if (typeof raw !== 'object' || Array.isArray(raw) || typeof cfg.enabled !== 'boolean') {
      errors.push({ field, message: 'must be {"enabled": boolean, "agents"?: [agent ids], "max_concurrent"?: 1..32}' });
      return [];
    }
    const extra = Object.keys(raw).filter((k) => !['enabled', 'agents', 'max_concurrent'].includes(k));
    if (extra.length) errors.push({ field, message: `unknown field(s): ${extra.join(', ')}` });
    const max = cfg.max_concurrent ?? DEFAULT_MAX_CONCURRENT_SUBAGENTS;
    if (typeof max !== 'number' || !Number.isInteger(max) || max < 1 || max > 32) errors.push({ field: `${field}.max_concurrent`, message: 'must be an integer 1..32' });
    let agents: Array<{ id: string; version: string }> | null = null;
    if (cfg.agents !== undefined) {
      if (!Array.isArray(cfg.agents) || cfg.agents.length > 32 || cfg.agents.some((x) => typeof x !== 'string')) {
        errors.push({ field: `${field}.agents`, message: 'must be an array of at most 32 agent ids' });
      } else {
        agents = [];
        for (const [i, id] of (cfg.agents as string[]).entries()) {
          if (id === self) continue;
          const target = ID_RE.test(id) && !id.startsWith('inline_') ? (tenantId === null ? await this.fileAgent(id) : await this.find(tenantId, id)) : null;
          if (!target) errors.push({ field: `${field}.agents[${i}]`, message: `no agent "${id}" in this tenant` });
          else agents.push({ id: target.id, version: target.version });
        }
      }
    }
    if (!cfg.enabled) return [];
    return subagentTools(agents, typeof max === 'number' ? max : DEFAULT_MAX_CONCURRENT_SUBAGENTS);
  }

  private async fileAgent(id: string): Promise<AgentDefinition | null> {
    return this.files.get(id);
  }

  private readonly fileResolved = new Map<string, ResolvedAgent>();

  private async resolveFile(d: AgentDefinition): Promise<ResolvedAgent> {
    const key = `${d.id}@${d.version}`;
    const hit = this.fileResolved.get(key);
    if (hit) return hit;
    const resolved = await this.resolve(d.tools, null, false);
    const errors = resolved.errors;
    // A file agent hands off to file agents only (shared by every tenant), pinned at their newest version.
    const tools = [...resolved.tools];
    for (const id of d.handoffs ?? []) {
      const target = this.files.get(id);
      if (target) tools.push(handoffTool(target));
      else errors.push({ field: 'handoffs', message: `no file agent "${id}"` });
    }
    // A file agent's subagents are file agents.
    tools.push(...(await this.resolveSubagents(null, d.subagents, 'subagents', d.id, errors)));
    const a: ResolvedAgent = { ...d, source: 'file', tenantId: null, resolvedTools: tools, createdAt: null, deletedAt: null };
    for (const t of tools) if (t.visibility === 'private') this.tools.notePrivateTool(t.name);
    if (errors.length) this.logger.warn(`agent ${d.id} v${d.version}: ${errors.map((e) => `${e.field}: ${e.message}`).join('; ')} (retried on next use)`);
    else this.fileResolved.set(key, a);
    return a;
  }

  /**
   * Entries to tools; MCP servers are asked for their tool lists as `tenantId` (null: a shared file
   * agent) (`strict`: a failure is a field error).
   */
  private async resolve(entries: ToolEntry[], tenantId: string | null, strict: boolean): Promise<{ tools: AgentTool[]; errors: FieldError[] }> {
    const tools: AgentTool[] = [];
    const errors: FieldError[] = [];
    for (const [i, e] of entries.entries()) {
      if (typeof e === 'string') {
        const t = this.tools.get(e);
        if (t) tools.push({ ...t, binding: { kind: 'builtin' } });
        continue;
      }
      if (e.type === 'http') {
        tools.push({
          name: e.name,
          description: e.description ?? '',
          parameters: e.parameters,
          ...serverPolicy(e),
          // Any http tool may answer 202 {"callback": true} (CONTRACT 17).
          callbackTimeoutMs: e.callback_timeout_ms ?? DEFAULT_CALLBACK_TIMEOUT_MS,
          binding: { kind: 'http', url: e.url, headers: e.headers ?? {} },
        });
      } else if (e.type === 'function') {
        tools.push({ name: e.name, description: e.description ?? '', parameters: e.parameters, ...exposure(e), idempotent: false, executor: 'client', timeoutMs: DEFAULT_TIMEOUT_MS, binding: { kind: 'function' } });
      } else if (e.type === 'mcp') {
        try {
          const listed = await this.external.listMcp(e, tenantId);
          for (const t of listed) {
            tools.push({
              name: `${e.server}.${t.name}`,
              description: t.description,
              parameters: t.inputSchema,
              ...serverPolicy(e),
              binding: { kind: 'mcp', server: e.server, url: e.url, headers: e.headers ?? {}, tool: t.name },
            });
          }
        } catch (err) {
          if (strict) this.logger.warn(`tools/list of MCP server ${e.server} failed: ${(err as Error).message}`);
          errors.push({ field: `tools[${i}].url`, message: `the MCP server "${e.server}" did not list its tools` });
        }
      }
    }
    return { tools, errors };
  }
}

/** An entry's risk and visibility, with their defaults. */
function exposure(e: { risk?: ToolRisk; visibility?: ToolVisibility }): Pick<AgentTool, 'risk' | 'visibility'> {
  return { risk: e.risk ?? 'auto', visibility: e.visibility ?? 'public' };
}

/** What a server-side (http, mcp) entry's tools share: exposure, idempotency, timeout. */
/** How long an http tool's call answered `202 {"callback": true}` waits for its callback by default. */
const DEFAULT_CALLBACK_TIMEOUT_MS = 3_600_000;

function serverPolicy(e: HttpToolEntry | McpToolEntry): Pick<AgentTool, 'risk' | 'visibility' | 'idempotent' | 'executor' | 'timeoutMs'> {
  return { ...exposure(e), idempotent: e.idempotent ?? false, executor: 'server', timeoutMs: e.timeout_ms ?? DEFAULT_TIMEOUT_MS };
}

function fromRow(r: VersionRow): ResolvedAgent {
  return {
    id: r.agent_id,
    version: String(r.version),
    description: r.description,
    model: r.model,
    instructions: r.instructions,
    tools: r.tools,
    source: 'api',
    tenantId: r.tenant_id,
    resolvedTools: r.resolved_tools,
    handoffs: handoffsOf({ resolvedTools: r.resolved_tools }).map((h) => h.id),
    createdAt: new Date(r.created_at),
    deletedAt: r.deleted_at ? new Date(r.deleted_at) : null,
  };
}
