import { AgentTool, ToolRisk, ToolVisibility } from './tool';

// Defined with the tool port (which runs them); named here too, where agent versions are described.
export type { AgentTool, ToolBinding } from './tool';

/** A tool entry of an agent definition (CONTRACT section 13). */
export type ToolEntry = string | HttpToolEntry | McpToolEntry | FunctionToolEntry;

interface ToolPolicy {
  risk?: ToolRisk;
  visibility?: ToolVisibility;
  idempotent?: boolean;
}

export interface HttpToolEntry extends ToolPolicy {
  type: 'http';
  name: string;
  description?: string;
  parameters: Record<string, unknown>;
  url: string;
  /** Values may name a secret as `${env:NAME}`: kept as written, resolved at call time only. */
  headers?: Record<string, string>;
  timeout_ms?: number;
  /** How long a call answered `202 {"callback": true}` waits for its callback (default 1 h; CONTRACT 17). */
  callback_timeout_ms?: number;
}

export interface McpToolEntry extends ToolPolicy {
  type: 'mcp';
  server: string;
  url: string;
  headers?: Record<string, string>;
  tools?: string[] | '*';
  timeout_ms?: number;
}

export interface FunctionToolEntry {
  type: 'function';
  name: string;
  description?: string;
  parameters: Record<string, unknown>;
  risk?: ToolRisk;
  visibility?: ToolVisibility;
}

/** An agent version: a versioned config file under `agents/` (`<id>.v<version>.json`) or one created by the API. */
export interface AgentDefinition {
  id: string;
  version: string;
  description: string;
  model: string;
  instructions: string;
  tools: ToolEntry[];
  /** Agents this one may hand the run to (CONTRACT 16); their versions are pinned as `transfer_to_<id>` tools. */
  handoffs?: string[];
  /** Subagents (CONTRACT 16): the four subagent tools, pinned with the version. */
  subagents?: SubagentsConfig;
}

/** `subagents` of an agent definition (CONTRACT 16). */
export interface SubagentsConfig {
  enabled: boolean;
  /** Agents a subagent may run besides this one (ids; pinned at their newest version). */
  agents?: string[];
  /** Subagent runs of one parent run active at once (default 6). */
  max_concurrent?: number;
}

export const DEFAULT_MAX_CONCURRENT_SUBAGENTS = 6;

/** An agent version with its tools resolved, as sessions pin it and runs use it. */
export interface ResolvedAgent extends AgentDefinition {
  source: 'file' | 'api';
  /** null for file agents (shared by every tenant). */
  tenantId: string | null;
  resolvedTools: AgentTool[];
  createdAt: Date | null;
  deletedAt: Date | null;
}

/** The names of a definition's built-in tool entries. */
export function builtinNames(def: Pick<AgentDefinition, 'tools'>): string[] {
  return def.tools.filter((t): t is string => typeof t === 'string');
}

/** Port: the configured (file) agents, every version kept so pinned sessions still resolve. */
export abstract class AgentCatalog {
  /** The newest version of each agent. */
  abstract list(): AgentDefinition[];
  /** The newest version, or a given one. */
  abstract get(id: string, version?: string): AgentDefinition | null;
  /** Model names a session or run may choose. */
  abstract knownModels(): string[];
}

/** What POST /agents and POST /agents/{id}/versions take. */
export interface AgentVersionInput {
  id: string;
  description?: string;
  model?: string;
  instructions?: string;
  tools: unknown[];
  handoffs?: unknown;
  subagents?: unknown;
}

export interface InlineAgentConfig {
  model?: string;
  instructions?: string;
  tools?: unknown[];
  handoffs?: unknown;
  subagents?: unknown;
}

export interface PreparedAgentVersion {
  id: string;
  description: string;
  model: string;
  instructions: string;
  entries: ToolEntry[];
  /** With one `transfer_to_<id>` tool per handoff target (pinned version). */
  resolvedTools: AgentTool[];
}

/** The tool name the model calls to hand the run to `agentId` (CONTRACT 16). */
export const HANDOFF_PREFIX = 'transfer_to_';

/** The `transfer_to_<id>` tool of a handoff target, pinned with the version that lists it. */
export function handoffTool(target: Pick<ResolvedAgent, 'id' | 'version' | 'model' | 'description'>): AgentTool {
  return {
    name: `${HANDOFF_PREFIX}${target.id}`,
    description: `Hands the conversation to the agent "${target.id}"${target.description ? ` (${target.description})` : ''}: it continues with the whole history.`,
    parameters: { type: 'object', properties: { reason: { type: 'string', maxLength: 2000, description: 'Why the conversation is handed over.' } }, additionalProperties: false },
    risk: 'auto',
    visibility: 'public',
    idempotent: true,
    executor: 'server',
    timeoutMs: 5_000,
    binding: { kind: 'handoff', agent_id: target.id, version: target.version, model: target.model },
  };
}

const SUBAGENT_ID = { type: 'string', description: 'The id `create_subagent` returned (or the name it was given).' };

/** The four subagent tools of an agent version whose `subagents` is enabled (CONTRACT 16). */
export function subagentTools(agents: Array<{ id: string; version: string }> | null, maxConcurrent: number): AgentTool[] {
  const pinned = agents ? agents.map((a) => ({ agent_id: a.id, version: a.version })) : null;
  const t = (name: string, op: 'create' | 'send' | 'wait' | 'close', description: string, properties: Record<string, unknown>, required: string[]): AgentTool => ({
    name,
    description,
    parameters: { type: 'object', properties, required, additionalProperties: false },
    risk: 'auto',
    visibility: 'public',
    idempotent: op === 'wait' || op === 'close',
    executor: 'server',
    timeoutMs: 5_000,
    binding: { kind: 'subagents', op, agents: pinned, max_concurrent: maxConcurrent },
  });
  return [
    t(
      'create_subagent',
      'create',
      `Starts a subagent on a task of its own (a child session); returns {subagent_id, run_id} at once while it works. At most ${maxConcurrent} at once.`,
      {
        agent_id: { type: 'string', description: `The agent it runs (default: you)${agents?.length ? `; one of: ${agents.map((a) => a.id).join(', ')}` : ''}.` },
        name: { type: 'string', maxLength: 200, description: 'A name for it.' },
        instructions: { type: 'string', minLength: 1, description: 'Its task: its first message.' },
      },
      ['instructions'],
    ),
    t('send_subagent_input', 'send', 'Gives a subagent whose run ended more input: it starts its next run; returns {subagent_id, run_id}.', { subagent_id: SUBAGENT_ID, input: { type: 'string', minLength: 1 } }, ['subagent_id', 'input']),
    t(
      'wait_for_subagents',
      'wait',
      "Waits until the subagents' runs have ended (or timeout_ms), then returns each one's final text and status.",
      { subagent_ids: { type: 'array', items: SUBAGENT_ID, description: 'Default: every subagent this run created.' }, timeout_ms: { type: 'integer', minimum: 0 } },
      [],
    ),
    t('close_subagent', 'close', 'Closes a subagent (its active run is cancelled; it takes no more input).', { subagent_id: SUBAGENT_ID }, ['subagent_id']),
  ];
}

/** The agents a version may hand off to (its pinned `transfer_to_` tools), in listed order. */
export function handoffsOf(a: Pick<ResolvedAgent, 'resolvedTools'>): Array<{ id: string; version: string }> {
  return a.resolvedTools.flatMap((t) => (t.binding.kind === 'handoff' ? [{ id: t.binding.agent_id, version: t.binding.version }] : []));
}

/** Whether a version can hand off at all (only such runs pay for the handoff reads). */
export function canHandOff(a: Pick<ResolvedAgent, 'resolvedTools'> | null | undefined): boolean {
  return !!a && a.resolvedTools.some((t) => t.binding.kind === 'handoff');
}

/**
 * Port: every agent a tenant can use - the shared file agents and its own API agents - with
 * tools resolved. `find` answers the newest live version; `findPinned` any version, also of a
 * deleted agent (sessions keep what they pinned).
 */
export abstract class AgentDirectory {
  abstract list(tenantId: string): Promise<ResolvedAgent[]>;
  abstract find(tenantId: string, id: string): Promise<ResolvedAgent | null>;
  abstract findPinned(tenantId: string, id: string, version: string): Promise<ResolvedAgent | null>;
  abstract versions(tenantId: string, id: string): Promise<ResolvedAgent[] | null>;
  /**
   * Checks a definition and resolves its tools (MCP servers are asked for their lists): no
   * transaction may be open around it. Throws invalid_request (400) with every field's problem.
   */
  abstract prepare(tenantId: string, input: AgentVersionInput, first: boolean): Promise<PreparedAgentVersion>;
  /** Stores version 1 (`first`) or the next version of an API agent: one statement. */
  abstract createVersion(tenantId: string, prepared: PreparedAgentVersion, first: boolean, createdBy: string): Promise<ResolvedAgent>;
  abstract remove(tenantId: string, id: string): Promise<void>;
  /**
   * Stores a session's inline configuration (model, instructions, built-in and function tools)
   * as a hidden one-version agent `id` of the tenant, which the session pins like any other.
   */
  abstract createInline(tenantId: string, subjectId: string, id: string, cfg: InlineAgentConfig): Promise<ResolvedAgent>;
}
