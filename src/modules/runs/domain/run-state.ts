import { Money, zero } from '../../usage/domain/money';
/** The run's value types and the decider's state (no lease, no version): the decider and the aggregate import these. */
import type { RunError, RunStatus, TerminationReason } from './run-status';

export interface RunLimits {
  max_steps: number;
  timeout_ms: number;
  max_total_tokens: number | null;
  max_tool_calls: number;
  /**
   * USD decimal string (CONTRACT 18): no model call is made whose estimate would take the run's
   * estimated_cost past it. Null: no budget (runs stored before it read as null).
   */
  max_cost: string | null;
  /**
   * How many levels of subagents may be below this run (0: it may start none). A subagent's run
   * gets one less than its parent's.
   */
  max_subagent_depth: number;
  /**
   * How many subagent runs this run's whole tree may start (`create_subagent` and
   * `send_subagent_input`, at every depth below it).
   */
  max_subagents_per_run: number;
}

/**
 * What a subagent's run was given of its parent's budgets when it started (its limits): held
 * from the parent's own budgets while it is active, so the tree never passes the parent's limits.
 */
export interface SubagentAllowance {
  tool_calls: number;
  /** Null: the parent has no token budget. */
  total_tokens: number | null;
  /** Null: the parent has no cost budget. */
  cost: string | null;
  subagent_runs: number;
}

export interface RunUsage {
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  /** Output tokens the model spent reasoning (part of output_tokens). */
  reasoning_tokens: number;
  /** From the model's price (CONTRACT 18): a decimal string, summed with decimal arithmetic. */
  estimated_cost: Money;
  model_calls: number;
  tool_calls: number;
}

export type PendingToolStatus =
  | 'requested'
  | 'awaiting_approval'
  | 'awaiting_client'
  /** `ask_user`: the run waits for the session's next user input (CONTRACT 17). */
  | 'awaiting_input'
  /** An http tool answered `202 {"callback": true}`: its result comes by POST .../callbacks/{tool_call_id}. */
  | 'awaiting_callback'
  /** `wait` / `wait_until`: the run sleeps until its pause's `until`. */
  | 'awaiting_timer'
  /** `wait_for_subagents`: the run waits until the named subagents' runs are terminal (or its pause's `until`). */
  | 'awaiting_subagents'
  | 'approved'
  | 'started'
  | 'completed'
  | 'failed';

/** A tool call of the current step, as saved in the run's state (the loop resumes from it). */
export interface PendingToolCall {
  tool_call_id: string;
  tool_name: string;
  arguments: unknown;
  risk: 'auto' | 'suggest' | 'approve' | null;
  executor: 'server' | 'client' | null;
  idempotent: boolean;
  status: PendingToolStatus;
  attempt: number;
  approval_id?: string;
  /** When that approval expires (epoch ms): a parent shown it later (recheck) shows the same. */
  approval_expires_at?: number;
  /**
   * SHA-256 (hex) of this attempt's `Callback-Token` (a tool that may answer by callback): the
   * token itself goes only to the tool; a callback must present it (single use: the call is
   * resolved by the first).
   */
  callback_token_hash?: string;
  /** Set when approval was rejected: the model gets this reason as the tool result. */
  rejection?: { reason: string | null; decided_by: string };
  ok?: boolean;
  result?: unknown;
  error?: { code: string; message: string; retryable?: boolean };
}

/** The loop's saved state (the `state` column): enough to resume after a crash, an approval or a client tool. */
export interface LoopState {
  pending: PendingToolCall[];
  /** The assistant message being streamed (set between message.started and message.completed). */
  streaming_message_id: string | null;
  /** Signatures `tool|args|result` of the most recent tool results, for loop detection. */
  loop_window: string[];
  /**
   * Steered inputs this run took (`run.input`), each placed in the model context right before
   * the assistant message of the turn that took it (`before`; null until that turn begins).
   */
  inputs: Array<{ message_id: string; before: string | null }>;
  /** `usage.model_calls` when the newest steered input was taken (the scripted model's turn index starts there). */
  input_call_base: number;
  /**
   * Tools the caller declared for this run only (the AG-UI `tools` of a request): offered to the
   * model besides the agent's, always executed by the client (the run waits for their outputs).
   */
  client_tools?: ClientToolSpec[];
  /** Why and until when the run waits (CONTRACT 17), while it waits for input, a callback, a timer or quota. */
  pause?: RunPause | null;
  /** The agent in control after a handoff (CONTRACT 16); absent: the run's own `agent`. */
  current_agent?: AgentRef;
  /** The subagents this run created (CONTRACT 16), each with its latest run as the parent knows it. */
  subagents?: SubagentRef[];
  /** A subagent's run: the parent run it reports its end to (CONTRACT 16). */
  parent?: { run_id: string; subagent_id: string };
  /** Subagent runs this run's tree started: its own and those its ended subagents reported (`max_subagents_per_run`). */
  subagent_runs?: number;
}

/** A subagent of a run: its child session, its latest run and what the parent knows of that run. */
export interface SubagentRef {
  /** The child session's id. */
  id: string;
  name: string;
  agent: AgentRef;
  run_id: string;
  /** The latest run's status as reported to the parent (`queued` until it ends). */
  status: RunStatus;
  /** The latest run's final text (once it ended). */
  text: string | null;
  closed: boolean;
  /** Approvals inside it already shown on the parent's stream (each once). */
  approvals?: string[];
  /** What its latest run was given of this run's budgets (held while that run is active). */
  allowance?: SubagentAllowance;
}

/** An agent version: what a run and a handoff name. */
export interface AgentRef {
  id: string;
  version: string;
}

/** The agent in control of the run: the last handoff's target, else the run's agent. */
export function currentAgentOf(s: Pick<RunState, 'agent' | 'state'>): AgentRef {
  return s.state.current_agent ?? s.agent;
}

export type PauseReason = 'input' | 'callback' | 'timer' | 'quota' | 'subagents';

/** A pause of CONTRACT 17: what the Run shows as `pause` and what wakes it (the `wake_at` column). */
export interface RunPause {
  reason: PauseReason;
  /** ISO 8601: when the run began to wait. */
  since: string;
  /** ISO 8601: when the wait ends by itself (the timer, the input or callback expiry, the quota window's reset), else null. */
  until: string | null;
  /** ISO 8601: when a node looks at the run next (the due index); null: only an answer wakes it. */
  wake_at: string | null;
  /** The tool call the pause belongs to (input, callback, timer). */
  tool_call_id: string | null;
  details: Record<string, unknown>;
}

/** A client tool of one run: what the model is shown; executor `client`, risk `auto`. */
export interface ClientToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** A user message steered to this run (CONTRACT section 7), with the configuration a run for it would get. */
export interface SteeredInput {
  message_id: string;
  /** When it was accepted: a run started for it (this run ended first) is queued as of then. */
  accepted_at: string;
  model: string;
  limits: RunLimits;
  metadata: Record<string, string>;
}

export function emptyLoopState(): LoopState {
  return { pending: [], streaming_message_id: null, loop_window: [], inputs: [], input_call_base: 0 };
}

/**
 * What the decider knows of a run: its fields as stored, without the lease (the worker's, in SQL)
 * and the version (the aggregate's: the guard of its commit). `decide` and `evolve` take this.
 */
export interface RunState {
  id: string;
  tenantId: string;
  subjectId: string;
  sessionId: string;
  agent: { id: string; version: string };
  model: string;
  status: RunStatus;
  terminationReason: TerminationReason | null;
  error: RunError | null;
  userMessageId: string;
  finalMessageId: string | null;
  stepCount: number;
  usage: RunUsage;
  limits: RunLimits;
  metadata: Record<string, string>;
  state: LoopState;
  /**
   * Steered inputs not taken yet. Kept in a column of its own: a steer appends to it without
   * changing the run's version; a save removes only what the run took.
   */
  inbox: SteeredInput[];
  cancelRequestedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  queueExpiresAt: Date;
}

/** A run as its resource shows it: its state and the version it was read at. */
export type RunProps = RunState & { version: number };

export const DEFAULT_LIMITS: RunLimits = { max_steps: 10, timeout_ms: 300_000, max_total_tokens: null, max_tool_calls: 50, max_cost: null, max_subagent_depth: 3, max_subagents_per_run: 20 };

/** Limits as stored: runs saved before a limit existed read its default. */
export function limitsOf(stored: Partial<RunLimits>): RunLimits {
  return {
    ...DEFAULT_LIMITS,
    ...stored,
    max_cost: stored.max_cost ?? null,
    max_total_tokens: stored.max_total_tokens ?? null,
    max_subagent_depth: stored.max_subagent_depth ?? DEFAULT_LIMITS.max_subagent_depth,
    max_subagents_per_run: stored.max_subagents_per_run ?? DEFAULT_LIMITS.max_subagents_per_run,
  };
}

export function emptyUsage(): RunUsage {
  return { input_tokens: 0, output_tokens: 0, cached_input_tokens: 0, reasoning_tokens: 0, estimated_cost: zero(), model_calls: 0, tool_calls: 0 };
}

/** A stored usage as it is now: runs saved before reasoning tokens and costs were counted read as zero. */
export function usageOf(stored: Partial<RunUsage> | null | undefined): RunUsage {
  return { ...emptyUsage(), ...(stored ?? {}) };
}
