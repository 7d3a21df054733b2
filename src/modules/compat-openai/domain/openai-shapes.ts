/**
 * The OpenAI Agents API (beta) resources this adapter answers, as the `openai` SDK 7.55 declares
 * them (`resources/beta/agents/**`). Pure data, no framework. Timestamps are Unix seconds.
 */
export type Json = Record<string, unknown>;

export interface OpenAiTokenUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
  /** Ours (CONTRACT 18): the run's estimated cost, a USD decimal string. */
  estimated_cost: { amount: string; currency: 'USD' };
}

export type TurnStatus = 'queued' | 'in_progress' | 'waiting' | 'completed' | 'failed' | 'cancelled';

export interface OpenAiTurn {
  id: string;
  agent_id: string;
  completed_at: number | null;
  created_at: number;
  error: { code: string; message: string } | null;
  object: 'agent.session.turn';
  session_id: string;
  started_at: number | null;
  status: TurnStatus;
  /** The subagent (child session, CONTRACT 16) whose turn this is; null for a top-level session's. */
  subagent_id: string | null;
  usage: OpenAiTokenUsage | null;
}

export type RequiredAction =
  | { type: 'function_call'; turn_id: string; call_id: string; name: string; arguments: string }
  /** Our extension (CONTRACT section 15): a server tool call that waits for a human decision. */
  | { type: 'approval_request'; turn_id: string; approval_id: string; call_id: string; name: string; arguments: string };

export type SessionStatus = 'idle' | 'in_progress' | 'requires_action' | 'failed';

/** The parts of an `agent.session` that do not change while a stream runs. */
export interface SessionSnapshot {
  id: string;
  agent: Json;
  created_at: number;
  metadata: Record<string, string>;
}

export interface OpenAiSession extends SessionSnapshot {
  object: 'agent.session';
  environment: { type: 'none' };
  error: string | null;
  last_active_at: number;
  required_actions: RequiredAction[];
  status: SessionStatus;
  usage: OpenAiTokenUsage | null;
  vault_ids: string[];
}

export type OpenAiItem =
  | {
      id: string;
      type: 'message';
      role: 'user' | 'assistant';
      status: 'in_progress' | 'completed' | 'incomplete';
      phase: 'commentary' | 'final_answer' | null;
      content: Array<{ type: 'output_text' | 'input_text'; text: string }>;
      turn_id: string;
    }
  | { id: string; type: 'function_call'; call_id: string; name: string; arguments: string; status: 'in_progress' | 'completed' | 'failed' | 'incomplete'; turn_id: string }
  | {
      id: string;
      type: 'function_call_output';
      call_id: string;
      output: string | null;
      error: string | null;
      status: 'completed' | 'failed';
      turn_id: string;
    }
  | OpenAiSubagentItem;

/** `Agent.multi_agent` (the SDK's `MultiAgentConfig`): our `subagents` (CONTRACT 16). */
export interface OpenAiMultiAgent {
  enabled: boolean;
  max_concurrent_subagents: number | null;
}

/** The SDK's `Subagent`: a child session of ours (CONTRACT 16). */
export interface OpenAiSubagent {
  id: string;
  closed_at: number | null;
  instructions: Array<{ type: 'output_text'; text: string }> | null;
  name: string | null;
  object: 'agent.session.subagent';
  opened_at: number;
  parent_agent_id: string;
  session_id: string;
  status: 'active' | 'closed';
}

/** The SDK's items of the four subagent tools (they stand for the call; their results are the subagents' own turns). */
export type OpenAiSubagentItem =
  | { id: string; type: 'create_subagent_call'; agent_id: string; content: Array<{ type: 'output_text'; text: string }>; model: string | null; reasoning_effort: string | null; status: ItemCallStatus; turn_id: string }
  | { id: string; type: 'send_subagent_input_call'; content: Array<{ type: 'output_text'; text: string }>; recipient_agent_id: string; sender_agent_id: string; status: ItemCallStatus; turn_id: string }
  | { id: string; type: 'wait_for_subagents_call'; recipient_agent_ids: string[]; sender_agent_id: string; status: ItemCallStatus; turn_id: string }
  | { id: string; type: 'close_subagent_call'; recipient_agent_id: string; sender_agent_id: string; status: ItemCallStatus; turn_id: string };

export type ItemCallStatus = 'in_progress' | 'completed' | 'failed' | 'incomplete';

/** The tools (CONTRACT 16) whose calls are subagent items on this surface. */
export const SUBAGENT_TOOLS = ['create_subagent', 'send_subagent_input', 'wait_for_subagents', 'close_subagent'] as const;
export type SubagentTool = (typeof SUBAGENT_TOOLS)[number];
export const isSubagentTool = (name: string): name is SubagentTool => (SUBAGENT_TOOLS as readonly string[]).includes(name);

/**
 * What naming the agents of subagent items takes: the calling agent's id (`sender_agent_id`,
 * `agent_id`) and a subagent argument (an id, or the name `create_subagent` gave it) as the
 * subagent's id; `wait_for_subagents` without `subagent_ids` names every subagent its turn created.
 */
export interface SubagentNaming {
  sender: string;
  resolve(turnId: string, ref: string): string;
  createdBy(turnId: string): string[];
}

/**
 * A call of a subagent tool as its item (`id`: the item id the call has anywhere else, `status`:
 * the call's), or null for any other tool.
 */
export function subagentItemOf(name: string, args: unknown, id: string, status: ItemCallStatus, turnId: string, naming: SubagentNaming): OpenAiSubagentItem | null {
  if (!isSubagentTool(name)) return null;
  const a = (typeof args === 'string' ? safeJson(args) : args) as Record<string, unknown> | null;
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  const sender = naming.sender;
  switch (name) {
    case 'create_subagent':
      return { id, type: 'create_subagent_call', agent_id: sender, content: [{ type: 'output_text', text: str(a?.instructions) }], model: null, reasoning_effort: null, status, turn_id: turnId };
    case 'send_subagent_input':
      return {
        id,
        type: 'send_subagent_input_call',
        content: [{ type: 'output_text', text: str(a?.input) }],
        recipient_agent_id: naming.resolve(turnId, str(a?.subagent_id)),
        sender_agent_id: sender,
        status,
        turn_id: turnId,
      };
    case 'wait_for_subagents': {
      const ids = Array.isArray(a?.subagent_ids) ? (a!.subagent_ids as unknown[]).map((x) => naming.resolve(turnId, str(x))) : naming.createdBy(turnId);
      return { id, type: 'wait_for_subagents_call', recipient_agent_ids: ids, sender_agent_id: sender, status, turn_id: turnId };
    }
    case 'close_subagent':
      return { id, type: 'close_subagent_call', recipient_agent_id: naming.resolve(turnId, str(a?.subagent_id)), sender_agent_id: sender, status, turn_id: turnId };
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** One `agent.session.*` event (SSE `data:`). */
export type AgentSessionEvent = Json & { event_id: string; type: string };

export function unixSeconds(d: Date | string | null | undefined): number | null {
  if (d === null || d === undefined) return null;
  return Math.floor((typeof d === 'string' ? Date.parse(d) : d.getTime()) / 1000);
}

export function toTokenUsage(
  u: { input_tokens?: number; output_tokens?: number; cached_input_tokens?: number; reasoning_tokens?: number; estimated_cost?: { amount: string } } | null | undefined,
): OpenAiTokenUsage | null {
  if (!u) return null;
  const input = u.input_tokens ?? 0;
  const output = u.output_tokens ?? 0;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: u.cached_input_tokens ?? 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: u.reasoning_tokens ?? 0 },
    total_tokens: input + output,
    estimated_cost: { amount: u.estimated_cost?.amount ?? '0', currency: 'USD' },
  };
}

/** Tool arguments and outputs travel as JSON text on this surface, as OpenAI sends them. */
export function jsonText(value: unknown): string {
  if (typeof value === 'string') return value;
  return JSON.stringify(value ?? {});
}

/** Native run status -> turn status. */
export function turnStatusOf(status: string): TurnStatus {
  switch (status) {
    case 'queued':
      return 'queued';
    case 'running':
    case 'cancelling':
    case 'waiting_for_subagents': // its subagents work: no external input is awaited
      return 'in_progress';
    case 'waiting_for_approval':
    case 'waiting_for_tool':
    case 'waiting_for_input':
    case 'waiting_for_callback':
    case 'waiting_for_timer':
    case 'waiting_for_quota':
      return 'waiting';
    case 'completed':
      return 'completed';
    case 'cancelled':
      return 'cancelled';
    default:
      return 'failed'; // failed, expired, terminated
  }
}

/** Why a turn failed, from a run's error or termination reason. */
export function turnErrorOf(status: string, error: { code?: string; message?: string } | null | undefined, terminationReason: string | null | undefined): OpenAiTurn['error'] {
  if (status === 'completed' || status === 'cancelled') return null;
  if (status === 'terminated') return { code: 'request_timeout', message: `the turn was terminated: ${terminationReason ?? 'limit reached'}` };
  if (status === 'expired') return { code: 'request_timeout', message: error?.message ?? 'the turn expired' };
  if (!error) return status === 'failed' ? { code: 'internal_error', message: 'the turn failed' } : null;
  return { code: 'server_error', message: `${error.code ?? 'error'}: ${error.message ?? ''}`.trim() };
}
