export type ToolRisk = 'auto' | 'suggest' | 'approve';
export type ToolVisibility = 'public' | 'private';
export type ToolExecutor = 'server' | 'client';

export interface ToolDefinition {
  name: string;
  description: string;
  parameters: Record<string, unknown>; // JSON Schema of the arguments
  risk: ToolRisk;
  visibility: ToolVisibility;
  /** Re-running with the same side-effect key has no further effect. */
  idempotent: boolean;
  executor: ToolExecutor;
  /** Upper bound of one execution; the loop passes min(this, time left in the run). */
  timeoutMs: number;
  /** A built-in that pauses the run instead of executing (CONTRACT 17): `ask_user` (input), `wait` / `wait_until` (timer). */
  pause?: 'input' | 'timer';
  /**
   * The tool may answer `202 {"callback": true}` (http tools): its result then comes by
   * `POST /v1/runs/{id}/callbacks/{tool_call_id}` within this (CONTRACT 17).
   */
  callbackTimeoutMs?: number;
}

/** How a resolved tool is executed. Header values are templates (`${env:NAME}`), never secrets. */
export type ToolBinding =
  | { kind: 'builtin' }
  | { kind: 'http'; url: string; headers: Record<string, string> }
  | { kind: 'mcp'; server: string; url: string; headers: Record<string, string>; tool: string }
  | { kind: 'function' }
  /** `transfer_to_<agent_id>` (CONTRACT 16): never executed; the run's decider hands the run to this pinned agent version. */
  | { kind: 'handoff'; agent_id: string; version: string; model: string }
  /** create_subagent / send_subagent_input / wait_for_subagents / close_subagent (CONTRACT 16): the run's decider performs them. */
  | { kind: 'subagents'; op: 'create' | 'send' | 'wait' | 'close'; agents: Array<{ agent_id: string; version: string }> | null; max_concurrent: number };

/** A tool of one agent version, resolved (MCP tools listed) and pinned with the version. */
export interface AgentTool extends ToolDefinition {
  binding: ToolBinding;
}

export interface ToolContext {
  tenantId: string;
  subjectId: string;
  sessionId: string;
  runId: string;
  toolCallId: string;
  /** `${runId}:${toolCallId}` (CONTRACT section 9). */
  idempotencyKey: string;
  /** 1 for the first execution, 2 for the first retry, ... */
  attempt: number;
  signal: AbortSignal;
  /** Epoch ms; the tool must have stopped by then. */
  deadline: number;
  /** This attempt's `Callback-Token` (a tool that may answer by callback sends it on; only its hash is stored). */
  callbackToken?: string;
  /**
   * Called with the secret values a call resolved (its `${secret:NAME}` / `${env:NAME}` headers),
   * awaited BEFORE the request goes out: the run records them for the scrubbing rule.
   */
  secretsResolved?: (values: ReadonlyArray<{ name: string; value: string }>) => Promise<void>;
}

/** `too_large`: the tool's answer passed the 1 MiB cap, whatever the transport (http body, MCP message, callback). */
export type ToolErrorCode = 'tool_failed' | 'tool_timeout' | 'tool_not_found' | 'invalid_tool_arguments' | 'too_large';

export type ToolOutcome =
  /** `deferred`: the tool accepted the call and answers by callback (`202 {"callback": true}`). */
  | { ok: true; result: unknown; deferred?: true }
  | { ok: false; error: { code: ToolErrorCode; message: string; retryable: boolean } };

/** Port: the tools. `execute` never throws: unknown tools and bad arguments are data for the model. */
export abstract class ToolRegistry {
  /** Names of private tools that agent versions define (http, mcp, function), as this node has seen them: private wins. */
  private readonly agentPrivate = new Set<string>();

  notePrivateTool(name: string): void {
    this.agentPrivate.add(name);
  }

  /** The projection's view: a built-in's visibility, else private when some agent version defines the name as private. */
  visibilityOf(name: string): ToolVisibility | undefined {
    return this.get(name)?.visibility ?? (this.agentPrivate.has(name) ? 'private' : undefined);
  }

  abstract get(name: string): ToolDefinition | null;
  abstract all(): ToolDefinition[];
  /**
   * Runs a tool: a built-in by name, or `resolved` - the tool as the run's pinned agent version
   * defines it (an http, mcp or function tool; CONTRACT section 13).
   */
  abstract execute(name: string, args: unknown, ctx: ToolContext, resolved?: AgentTool): Promise<ToolOutcome>;
}

/**
 * Port implemented by the automations module: what the built-in tool `schedule_follow_up`
 * does (CONTRACT section 17): an automation of the run's session, `created_by: agent`.
 */
export abstract class FollowUpScheduler {
  /** The automation as the tool returns it to the model; a DomainError for a bad schedule. */
  abstract schedule(
    ctx: { tenantId: string; subjectId: string; sessionId: string; toolCallId: string },
    request: { at?: string; cron?: string; timezone?: string; input: string },
  ): Promise<Record<string, unknown>>;
}

/** Port implemented by the attachments module: what `read_attachment` and the model input read. */
export abstract class AttachmentReader {
  /** The caller's own `ready` attachment, or a DomainError (attachment_not_found / not_ready / ...). */
  abstract read(owner: { tenantId: string; subjectId: string }, attachmentId: string, maxTextBytes: number): Promise<{
    attachment_id: string;
    filename: string;
    media_type: string;
    size_bytes: number;
    sha256: string;
    text?: string;
    truncated?: boolean;
    bytes?: Buffer;
  }>;
}
