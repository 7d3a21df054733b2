import { addAmounts, callCost, compareAmounts, shareOfRest, TokenPrice } from '../../usage/domain/money';
import { DomainError } from '../../../common/errors/domain-error';
import type { ContentPart } from '../../agents/domain/model-provider';
import { canonicalJson } from '../../idempotency/domain/fingerprint';
import { HANDOFF_PREFIX } from '../../agents/domain/agent-definition';
import { AgentRef, currentAgentOf, DEFAULT_LIMITS, PendingToolCall, RunLimits, RunPause, RunState, RunUsage, SteeredInput, SubagentAllowance, SubagentRef } from './run-state';
import { canMove, isTerminal, isWaiting, RunError, RunErrorCode, RunStatus, TerminationReason, WaitingStatus } from './run-status';
export type { SubagentRef };

/**
 * The agent loop as a decider (CONTRACT sections 7-10): `decide(state, observation, env)` says
 * what happened (events) and what to do next (effect); `evolve(state, event)` applies one event.
 * Pure: no I/O, no clock but `env.now`, no ids but `env.newId`. The executor (the interpreter)
 * performs the effects and feeds what it observed back; every rule of what happens next is here.
 */

/** What the decider needs to know of a tool (from the agent's tool registry). */
export interface ToolFacts {
  risk: 'auto' | 'suggest' | 'approve';
  executor: 'server' | 'client';
  idempotent: boolean;
  /**
   * A built-in that pauses the run instead of executing (CONTRACT 17): `input` (`ask_user
   * {question}`), `timer` (`wait {seconds}`, `wait_until {time}`).
   */
  pause?: 'input' | 'timer';
  /**
   * The tool may answer `202 {"callback": true}` (an http tool): each attempt gets a
   * `Callback-Token`, and its result may arrive by callback within this (CONTRACT 17).
   */
  callback_timeout_ms?: number;
  /** `transfer_to_<agent_id>` (CONTRACT 16): calling it hands the run to this pinned agent version. */
  handoff?: HandoffTarget;
  /** A subagent tool (CONTRACT 16) with its agent version's `subagents` configuration. */
  subagent?: SubagentToolFacts;
}

/** What a subagent tool knows of its agent's `subagents: {enabled, agents?, max_concurrent?}`. */
export interface SubagentToolFacts {
  op: 'create' | 'send' | 'wait' | 'close';
  /** The agents a subagent may run (pinned versions); null: only the agent in control itself. */
  agents: AgentRef[] | null;
  max_concurrent: number;
}

/** A subagent's run ended: what its parent is told (and counts toward its budgets). */
export interface SubagentOutcome {
  subagent_id: string;
  run_id: string;
  status: RunStatus;
  text: string | null;
  /** `subagent_runs`: the subagent runs its tree started (they count toward this run's `max_subagents_per_run`). */
  usage: Pick<RunUsage, 'input_tokens' | 'output_tokens' | 'cached_input_tokens' | 'tool_calls'> & { cost?: string; subagent_runs?: number };
}

/**
 * An approval requested inside a subagent (its run, or a run below it): what the parent's stream
 * shows of it (`approval.requested` with the asking run's `run_id`, CONTRACT 16).
 */
export interface SubagentApproval {
  approval_id: string;
  /** The run that asked (the subagent's run, or a run of a subagent below it). */
  run_id: string;
  tool_call_id: string;
  tool_name: string;
  arguments: unknown;
  risk: string;
  expires_at: number;
}

/** A handoff target as the handing agent's version pinned it (its model comes with it). */
export interface HandoffTarget extends AgentRef {
  model: string;
}

/** The tenant's spend limit as the run sees it before a model call (CONTRACT 17/18). */
export type QuotaStatus = { exceeded: false } | { exceeded: true; resets_at: number; details: Record<string, unknown> };

/** How often a run waiting for subagents is looked at again besides their reports (CONTRACT 16). */
export const SUBAGENT_RECHECK_MS = 5_000;

/** How often a run waiting for quota is looked at again (a raised limit is seen within this). */
export const QUOTA_RECHECK_MS = 5_000;

export interface DecideEnv {
  now: number;
  newId(prefix: 'msg' | 'apr' | 'call'): string;
  tool(name: string): ToolFacts | null;
  /** Whether approvals can be opened here (the approvals module is present). */
  approvalsAvailable?: boolean;
  approvalTtlMs?: number;
  /** `INPUT_TTL_MS`: an `ask_user` unanswered this long expires the run. */
  inputTtlMs?: number;
  /** A fresh single-use secret and its SHA-256 (hex): a callback token (the token goes to the tool only). */
  newSecret?(): { token: string; hash: string };
  /** The tenant's spend limit now (the executor and the wake sweeper fill it when there is one). */
  quota?: QuotaStatus;
  /**
   * What the next model call would cost at most, for `limits.max_cost` (the executor fills it
   * when the run has one): its estimated input tokens, the model's output cap and its price.
   */
  nextCall?: NextCallEstimate;
  /**
   * False when the run's owner no longer has a valid key (checked as a queued run is claimed):
   * the run does not start its work (see `decideStart`). Absent: not checked here.
   */
  ownerAccess?: boolean;
  /**
   * The agent that had control when the session's previous run ended (CONTRACT 16: the next run
   * starts with it). Filled only for a queued run whose agent can hand off.
   */
  lastAgent?: HandoffTarget | null;
}

/** The inputs of the pre-call cost check: priced here, so the rule is a table row. */
export interface NextCallEstimate {
  /** The call's input as the executor estimates it (the context's characters / 4). */
  input_tokens: number;
  /** The model's output cap (its registry entry's `max_output_tokens`, else the documented default). */
  max_output_tokens: number;
  /** No price: the call costs nothing. */
  price?: TokenPrice;
}

export type ToolResult = { ok: true; result: unknown } | { ok: false; error: { code: string; message: string; retryable?: boolean } };

/** A server tool is tried at most this often when its failures are retryable. */
export const MAX_TOOL_ATTEMPTS = 3;
/** The wait before the first retry of a tool; it doubles per retry (with jitter), at most TOOL_RETRY_MAX_MS. */
export const TOOL_RETRY_BASE_MS = 500;
export const TOOL_RETRY_MAX_MS = 10_000;

/**
 * The wait before attempt `failed + 1` of a call: exponential with "equal jitter" (half fixed, half
 * spread), so retries of many calls do not arrive together and the first retry waits at least
 * TOOL_RETRY_BASE_MS / 2. The spread comes from the call id and attempt (a pure decider: the same
 * history always decides the same wait).
 */
export function toolRetryDelayMs(toolCallId: string, failed: number): number {
  const ceiling = Math.min(TOOL_RETRY_MAX_MS, TOOL_RETRY_BASE_MS * 2 ** Math.max(0, failed - 1));
  let h = 2166136261;
  for (const ch of `${toolCallId}#${failed}`) h = Math.imul(h ^ ch.charCodeAt(0), 16777619) >>> 0;
  return Math.round(ceiling / 2 + (ceiling / 2) * (h / 0xffffffff));
}
/** The same call with the same result this many times in a row ends the run (`loop_detected`). */
const LOOP_WINDOW = 3;

// ---- events -------------------------------------------------------------------------------

export type RunEvent =
  /** `agent`: the run starts with the agent that had control of its session last (not its own). */
  | { type: 'started'; at: number; agent?: HandoffTarget }
  | { type: 'input_received'; input: SteeredInput }
  | { type: 'input_taken'; message_id: string }
  | { type: 'turn_begun'; message_id: string }
  | { type: 'delta_streamed'; message_id: string; delta: string }
  | {
      type: 'turn_ended';
      message_id: string;
      content: ContentPart[];
      status: 'completed' | 'failed' | 'cancelled';
      usage: TurnUsage;
      /** A crash-interrupted turn is redone: it is not counted as a step or a model call. */
      redo: boolean;
    }
  | { type: 'tools_requested'; calls: PendingToolCall[] }
  | { type: 'pending_cleared' }
  | { type: 'tool_started'; tool_call_id: string; attempt: number; callback_token_hash?: string }
  | { type: 'tool_handed_to_client'; tool_call_id: string }
  | {
      type: 'tool_finished';
      tool_call_id: string;
      result: ToolResult;
      duration_ms: number;
      /** The `tool` message that carries the result into the model context. */
      result_message_id: string;
      /** `tool.started` attempt 0 first (a call that never ran keeps the order rule); none with `silent`. */
      not_started?: boolean;
      /** A rejected call: its result is the rejection, without tool events. */
      silent?: boolean;
    }
  | { type: 'approval_opened'; tool_call_id: string; approval_id: string; expires_at: number }
  | { type: 'approval_decided'; approval_id: string; tool_call_id: string; decision: 'approve' | 'reject'; decided_by: string; reason: string | null }
  | { type: 'waiting'; status: WaitingStatus; reason: WaitReason }
  /** `ask_user`: the call waits for the session's next user input (until `expires_at`). */
  | { type: 'input_requested'; tool_call_id: string; question: string; at: number; expires_at: number }
  /** `wait` / `wait_until`: the call sleeps until `until` (the requested time, at most the run's deadline). */
  | { type: 'timer_set'; tool_call_id: string; at: number; until: number; requested_until: number }
  /** The tool answered `202 {"callback": true}`: its result comes by callback until `expires_at`. */
  | { type: 'callback_awaited'; tool_call_id: string; at: number; expires_at: number }
  /** The tenant's spend limit is reached before a model call: the run waits for quota. */
  | { type: 'quota_reached'; at: number; resets_at: number; details: Record<string, unknown> }
  | { type: 'resumed' }
  /** `transfer_to_<agent>` (its call is finished first): the run continues with `to`, its model and tools. */
  | { type: 'handed_off'; tool_call_id: string; from: AgentRef; to: AgentRef; model: string; reason: string | null }
  | { type: 'cancel_requested'; requested_by: string; at: number; reason?: SubagentCancelReason }
  /** `create_subagent` / `send_subagent_input`: a run of the subagent was started (`created`: its session too). */
  | { type: 'subagent_run_started'; tool_call_id: string; subagent: { id: string; name: string; agent: AgentRef }; run_id: string; created: boolean; allowance?: SubagentAllowance }
  /** `wait_for_subagents`: the call waits until these subagents' runs ended (or `until`). */
  | { type: 'subagents_awaited'; tool_call_id: string; subagent_ids: string[]; at: number; until: number }
  /** A subagent's run ended: its status and text, its usage added to this run's. */
  | { type: 'subagent_ended'; outcome: SubagentOutcome }
  /** `close_subagent`: it takes no more input. */
  | { type: 'subagent_closed'; subagent_id: string }
  /** An approval inside a subagent, shown on this run's stream (once per approval). */
  | { type: 'subagent_approval_relayed'; subagent_id: string; approval: SubagentApproval }
  /** A cancel cascades: these subagent runs are to be cancelled (the cancel's writer does it, CONTRACT 16). */
  | { type: 'subagents_cancel_requested'; run_ids: string[]; reason?: SubagentCancelReason }
  | {
      type: 'finished';
      status: 'completed' | 'failed' | 'cancelled' | 'expired' | 'terminated';
      reason?: TerminationReason;
      error?: RunError | null;
      final_message_id?: string | null;
      at: number;
    };

/**
 * Why a subagent's run is cancelled by its parent (the child's `run.cancel_requested` says so):
 * the parent was cancelled, `close_subagent` closed it, or the parent ended otherwise (completed,
 * failed, expired, terminated: a parent's limits bound its whole tree, nothing of it runs on).
 */
export type SubagentCancelReason = 'parent_cancelled' | 'parent_ended' | 'subagent_closed';

/** `run.waiting`'s `reason` for each waiting status. */
export type WaitReason = 'approval_required' | 'client_tool' | 'input_required' | 'callback' | 'timer' | 'quota' | 'subagents';

// ---- observations and effects -------------------------------------------------------------

/** One model call's usage; `cost` is its estimated cost (USD decimal string) from the model's price. */
export interface TurnUsage {
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  reasoning_tokens?: number;
  cost?: string;
}

export interface ModelTurnOutcome {
  message_id: string;
  text: string;
  tool_calls: Array<{ id: string; name: string; arguments: unknown }>;
  usage: TurnUsage;
  /** The model call failed (its own error, or an abort that was not a cancel). */
  failure: { code: RunErrorCode; message: string } | null;
  /** The call was aborted (a cancel or the deadline). */
  aborted: boolean;
}

export type Observation =
  /** What next, from the saved state (also after a take-over: the state tells what was interrupted). */
  | { type: 'tick'; cancel_signalled?: boolean }
  | { type: 'lease_resumed' }
  /** The content of the message a crashed model turn left open (effect `close_interrupted_turn`). */
  | { type: 'interrupted_turn_read'; message_id: string; content: ContentPart[] }
  | ({ type: 'model_turn_ended'; cancel_signalled?: boolean } & ModelTurnOutcome)
  | { type: 'tool_finished'; tool_call_id: string; result: ToolResult; duration_ms: number; cancel_signalled?: boolean }
  | { type: 'approval_decided'; approval_id: string; tool_call_id: string; decision: 'approve' | 'reject'; decided_by: string; reason: string | null }
  | { type: 'client_tool_outputs'; outputs: Array<{ tool_call_id: string; output?: unknown; error?: { code?: string; message: string } }> }
  /** `reason`: a parent's cascade (the parent's id is `requested_by`: `run:<id>`). */
  | { type: 'cancel_requested'; requested_by: string; reason?: SubagentCancelReason }
  | { type: 'input_steered'; inputs: SteeredInput[] }
  /** The queue TTL passed (a sweeper); only a run still queued expires. */
  | { type: 'queue_expired' }
  /** An approval was not decided in time (a sweeper); only a run still waiting for it expires. */
  | { type: 'approval_expired'; approval_id: string }
  | { type: 'failed_unexpectedly' }
  /**
   * A user input to the session of a run waiting for input (`ask_user`, CONTRACT 17): it answers
   * the call, the same run continues. A run that no longer waits for input decides nothing (the
   * input is then an ordinary input of the session).
   */
  | { type: 'input_answered'; message_id: string; text: string }
  /**
   * `POST /runs/{id}/callbacks/{tool_call_id}`: authorised by the SHA-256 (hex) of the presented
   * `Callback-Token`, or by an admin key (`admin`).
   */
  | { type: 'callback_received'; tool_call_id: string; token_hash: string | null; admin: boolean; output?: unknown; error?: { code?: string; message: string } }
  /** The tool answered `202 {"callback": true}` (the executor). */
  | { type: 'tool_deferred'; tool_call_id: string }
  /** A waiting run's `wake_at` came (the due sweeper): a timer rings, an input or callback expires, quota is looked at again. */
  | { type: 'wake' }
  /** The run ended with steered input it did not take (read with its session locked). */
  | { type: 'leftover_inputs'; inputs: SteeredInput[] }
  /** The executor started a subagent's run for `create_subagent` / `send_subagent_input` (effect `start_subagent_run`). */
  | { type: 'subagent_run_started'; tool_call_id: string; subagent: { id: string; name: string; agent: AgentRef }; run_id: string; created: boolean; allowance?: SubagentAllowance }
  /** A subagent's run ended (reported by the subagent's ending commit, CONTRACT 16). */
  | { type: 'subagent_ended'; outcome: SubagentOutcome }
  /** An approval was requested inside the subagent `subagent_id` (reported by the commit that opened it, CONTRACT 16). */
  | { type: 'subagent_approval_requested'; subagent_id: string; approval: SubagentApproval };

export type Effect =
  /** Commit (when there are changes) and decide again. */
  | { type: 'continue' }
  | { type: 'call_model'; message_id: string; call_index: number }
  /**
   * `commit_start_first`: `tool.started` is committed before the tool runs (a tool that is not
   * idempotent: a crash after the start makes its outcome unknown, it is never run again); an
   * idempotent one may start at once (a crash before the commit runs it again).
   */
  | { type: 'run_tool'; call: PendingToolCall; attempt: number; commit_start_first: boolean; delay_ms?: number; callback_token?: string }
  /** The approval row opens in the same commit; then the run waits. */
  | { type: 'open_approval'; call: PendingToolCall; approval_id: string; expires_at: number }
  | { type: 'wait'; status: WaitingStatus }
  | { type: 'close_interrupted_turn'; message_id: string }
  /** The run is ready to be executed again (a worker picks it up). */
  | { type: 'resume' }
  | { type: 'finish' }
  /** ONE new queued run for all the input an ended run left (see `followUpRun`). */
  | { type: 'queue_follow_up'; run: FollowUpRun }
  /** The input an ended run left will never be taken: its receipts say `rejected` (see `decideLeftovers`). */
  | { type: 'reject_inputs'; inputs: SteeredInput[] }
  /**
   * The run's end is not committed: it takes the input that arrived before it could end in another
   * turn (see `decideLeftovers`). The executor retracts the end and decides its turn again with them.
   */
  | { type: 'take_leftovers'; inputs: SteeredInput[] }
  /**
   * Start a run of a subagent with `input` as its user message (CONTRACT 16): a new child session
   * (`subagent.id` null: `create_subagent`) or an existing one (`send_subagent_input`). Its start
   * (`tool.started`) is committed first: a crash after it never starts a second one.
   */
  | {
      type: 'start_subagent_run';
      call: PendingToolCall;
      subagent: { id: string | null; name: string; agent: AgentRef };
      input: string;
      /** The subagent run's limits: its share of this run's budgets (see `subagentShare`). */
      limits: Partial<RunLimits>;
      allowance: SubagentAllowance;
    }
  /** Nothing to do (a repeated cancel, a steer already known). */
  | { type: 'none' };

/**
 * The one run queued for the steered input an ended run did not take (CONTRACT section 7, FIFO
 * follow-up): `first` is its user message (its configuration is the run's), `rest` its inbox in
 * commit order (its first model turn takes them, in that order).
 */
export interface FollowUpRun {
  first: SteeredInput;
  rest: SteeredInput[];
}

export interface Decision {
  events: RunEvent[];
  effect: Effect;
}

// ---- decide -------------------------------------------------------------------------------

const openCall = (p: PendingToolCall) => p.status !== 'completed' && p.status !== 'failed';

export function deadlineOf(s: RunState, now: number): number {
  return s.startedAt ? s.startedAt.getTime() + s.limits.timeout_ms : now + s.limits.timeout_ms;
}

function tokensUsed(u: RunUsage): number {
  return u.input_tokens + u.output_tokens;
}

/**
 * The pre-call check of `limits.max_cost` (CONTRACT 18): the cost so far plus the next call's
 * estimate (its input tokens at the input price + the model's output cap at the output price)
 * would pass the budget. Without an estimate only what the run spent counts.
 */
export function overCostBudget(s: Pick<RunState, 'limits' | 'usage' | 'state'>, next: NextCallEstimate | undefined): boolean {
  const max = s.limits.max_cost ?? null;
  if (max === null) return false;
  const estimate = next ? callCost(next.price, { input_tokens: next.input_tokens, output_tokens: next.max_output_tokens }) : '0';
  return compareAmounts(addAmounts(s.usage.estimated_cost.amount, estimate, held(s).cost), max) > 0;
}

/**
 * What this run's active subagent runs hold of its budgets (their allowances): counted as used
 * until they end (then their real usage is), so the run and its whole tree stay inside its limits.
 */
export function held(s: Pick<RunState, 'state'>): { tool_calls: number; total_tokens: number; cost: string; subagent_runs: number } {
  const out = { tool_calls: 0, total_tokens: 0, cost: '0', subagent_runs: 0 };
  for (const c of s.state.subagents ?? []) {
    if (isTerminal(c.status) || !c.allowance) continue;
    out.tool_calls += c.allowance.tool_calls;
    out.total_tokens += c.allowance.total_tokens ?? 0;
    if (c.allowance.cost !== null) out.cost = addAmounts(out.cost, c.allowance.cost);
    out.subagent_runs += c.allowance.subagent_runs;
  }
  return out;
}

/**
 * A new subagent run's share of this run's budgets: of what is left of each (not used, not held
 * by its other active subagents), an equal part for each subagent run this turn still starts
 * (`parts` - 1, this one included) and one for this run itself - a chain halves what is left at
 * each level, a fan-out of n in one turn gets n equal shares and the run keeps one; one level of
 * depth less; at most the time left before this run's deadline. What it was given is held from
 * this run's budgets while it is active, then its real usage counts: no tree passes its top
 * run's limits.
 */
function subagentShare(s: RunState, now: number, parts: number): { limits: Partial<RunLimits>; allowance: SubagentAllowance } {
  const h = held(s);
  const l = s.limits;
  // This start itself counts: its tool call (tool_started) and its run.
  const toolCalls = Math.max(0, Math.floor((l.max_tool_calls - (s.usage.tool_calls + 1) - h.tool_calls) / parts));
  const subagentRuns = Math.max(0, Math.floor((l.max_subagents_per_run - (treeRuns(s) + 1) - h.subagent_runs) / parts));
  const tokens = l.max_total_tokens === null ? null : Math.max(0, Math.floor((l.max_total_tokens - tokensUsed(s.usage) - h.total_tokens) / parts));
  const cost = l.max_cost ? shareOfRest(l.max_cost, parts, s.usage.estimated_cost.amount, h.cost) : null;
  const allowance: SubagentAllowance = { tool_calls: toolCalls, total_tokens: tokens, cost, subagent_runs: subagentRuns };
  const limits: Partial<RunLimits> = {
    max_tool_calls: toolCalls,
    max_subagents_per_run: subagentRuns,
    max_subagent_depth: Math.max(0, l.max_subagent_depth - 1),
    timeout_ms: Math.max(1, Math.min(DEFAULT_LIMITS.timeout_ms, deadlineOf(s, now) - now)),
    // A token or cost budget of 0 is no budget at all: the least a subagent gets is one token / the smallest amount.
    ...(tokens !== null ? { max_total_tokens: Math.max(1, tokens) } : {}),
    ...(cost !== null ? { max_cost: compareAmounts(cost, '0') > 0 ? cost : '0.000000000001' } : {}),
  };
  return { limits, allowance };
}

/** The subagent runs the current turn still starts (create / send calls not started yet, the one deciding now included). */
function startsLeftInTurn(s: RunState, env: DecideEnv): number {
  const op = (p: PendingToolCall) => env.tool(p.tool_name)?.subagent?.op;
  return Math.max(1, s.state.pending.filter((p) => p.status === 'requested' && (op(p) === 'create' || op(p) === 'send')).length);
}

/** The subagent runs this run's tree started: its own and those its ended subagents reported. */
function treeRuns(s: Pick<RunState, 'state'>): number {
  return s.state.subagent_runs ?? 0;
}

function finished(status: Extract<RunEvent, { type: 'finished' }>['status'], now: number, more: Partial<Extract<RunEvent, { type: 'finished' }>> = {}): RunEvent {
  return { type: 'finished', status, at: now, ...more };
}

function resultPartOf(call: PendingToolCall, result: ToolResult): ContentPart {
  return result.ok
    ? { type: 'tool_result', tool_call_id: call.tool_call_id, tool_name: call.tool_name, ok: true, result: result.result }
    : { type: 'tool_result', tool_call_id: call.tool_call_id, tool_name: call.tool_name, ok: false, error: { code: result.error.code, message: result.error.message } };
}

/** The `tool` message content of a finished call (what the model reads). */
export function toolResultContent(call: PendingToolCall, result: ToolResult): ContentPart[] {
  return [resultPartOf(call, result)];
}

function loopSignature(call: PendingToolCall, result: ToolResult): string {
  return `${call.tool_name}|${canonicalJson(call.arguments ?? {})}|${canonicalJson(result.ok ? result.result : result.error)}`;
}

/** A finished call's events, and the run's end if it closed a loop. */
function finishCall(s: RunState, call: PendingToolCall, result: ToolResult, durationMs: number, env: DecideEnv, flags: { not_started?: boolean; silent?: boolean } = {}): Decision {
  const events: RunEvent[] = [{ type: 'tool_finished', tool_call_id: call.tool_call_id, result, duration_ms: durationMs, result_message_id: env.newId('msg'), ...flags }];
  const sig = loopSignature(call, result);
  const window = [...s.state.loop_window, sig].slice(-LOOP_WINDOW);
  if (window.length === LOOP_WINDOW && window.every((x) => x === sig)) {
    events.push(finished('terminated', env.now, { reason: 'loop_detected' }));
    return { events, effect: { type: 'finish' } };
  }
  return { events, effect: { type: 'continue' } };
}

function notFinished(s: RunState): void {
  if (isTerminal(s.status)) throw new DomainError('run_finished', `the run is already ${s.status}`, { run_id: s.id, status: s.status }, s.id);
}

const UNKNOWN_AFTER_CRASH = { code: 'outcome_unknown', message: 'the tool was interrupted and may or may not have taken effect', retryable: false };
const UNKNOWN_AFTER_CANCEL = { code: 'outcome_unknown', message: 'interrupted by cancellation', retryable: false };

const ACCESS_REVOKED = { code: 'access_revoked' as const, message: "the run's owner no longer has a valid key: the queued run was not started" };

/**
 * A queued run starts (CONTRACT section 7) with the configuration frozen when it was accepted
 * (agent version, model, limits: its own fields). Access is checked again as it starts: an owner
 * whose key was revoked meanwhile gets no work done, the run fails `access_revoked` (its
 * `run.finished` is audited like every run event). A run moves to `failed` only from `running`.
 */
function decideStart(s: RunState, env: DecideEnv): Decision {
  // The session's previous run ended with another agent in control: this one starts with it (CONTRACT 16).
  const last = env.lastAgent;
  const resumeWith = last && (last.id !== s.agent.id || last.version !== s.agent.version) ? last : null;
  const started: RunEvent = { type: 'started', at: env.now, ...(resumeWith ? { agent: { ...resumeWith } } : {}) };
  if (env.ownerAccess === false) return { events: [started, finished('failed', env.now, { error: ACCESS_REVOKED })], effect: { type: 'finish' } };
  return { events: [started], effect: { type: 'continue' } };
}

function decideNext(s: RunState, env: DecideEnv, cancelSignalled: boolean): Decision {
  const now = env.now;
  if (isTerminal(s.status)) return { events: [], effect: { type: 'finish' } };
  if (isWaiting(s.status)) return { events: [], effect: { type: 'wait', status: s.status } };
  if (s.status === 'queued') return decideStart(s, env);
  if (s.state.streaming_message_id) return { events: [], effect: { type: 'close_interrupted_turn', message_id: s.state.streaming_message_id } };

  if (s.status === 'cancelling' || s.cancelRequestedAt !== null || cancelSignalled) {
    // Tools started on a node that died while cancelling have an unknown outcome.
    const events: RunEvent[] = s.state.pending
      .filter((p) => p.status === 'started')
      .map((p) => ({ type: 'tool_finished', tool_call_id: p.tool_call_id, result: { ok: false, error: UNKNOWN_AFTER_CANCEL }, duration_ms: 0, result_message_id: env.newId('msg') }));
    events.push(finished('cancelled', now));
    return { events, effect: { type: 'finish' } };
  }

  if (now >= deadlineOf(s, now)) return { events: [finished('terminated', now, { reason: 'deadline' })], effect: { type: 'finish' } };

  const open = s.state.pending.filter(openCall);
  // Every call of the turn is resolved: cleared (it commits with the next step's write).
  if (s.state.pending.length > 0 && open.length === 0) return { events: [{ type: 'pending_cleared' }], effect: { type: 'continue' } };
  if (open.length > 0) return decideTool(s, open[0], env);

  if (s.stepCount >= s.limits.max_steps) return { events: [finished('terminated', now, { reason: 'max_steps' })], effect: { type: 'finish' } };
  if (s.limits.max_total_tokens !== null && tokensUsed(s.usage) + held(s).total_tokens >= s.limits.max_total_tokens) {
    return { events: [finished('terminated', now, { reason: 'token_budget' })], effect: { type: 'finish' } };
  }
  if (overCostBudget(s, env.nextCall)) return { events: [finished('terminated', now, { reason: 'cost_budget' })], effect: { type: 'finish' } };
  if (env.quota?.exceeded) return pauseForQuota(env.quota, now);
  // The next model turn takes the input steered to the run since the last one (CONTRACT section 7).
  const events: RunEvent[] = s.inbox.map((i) => ({ type: 'input_taken', message_id: i.message_id }));
  const messageId = env.newId('msg');
  events.push({ type: 'turn_begun', message_id: messageId });
  // The scripted model counts its turns from the newest user text: a steered one starts again.
  const callIndex = s.inbox.length > 0 ? 0 : s.usage.model_calls - s.state.input_call_base;
  return { events, effect: { type: 'call_model', message_id: messageId, call_index: callIndex } };
}

function decideTool(s: RunState, p: PendingToolCall, env: DecideEnv): Decision {
  const facts = env.tool(p.tool_name);
  switch (p.status) {
    case 'awaiting_approval':
    case 'awaiting_client':
    case 'awaiting_input':
    case 'awaiting_callback':
    case 'awaiting_timer':
    case 'awaiting_subagents': {
      // Resumed without this call resolved: wait again.
      const [status, reason] = WAIT_OF[p.status];
      return { events: [{ type: 'waiting', status, reason }], effect: { type: 'wait', status } };
    }
    case 'started':
      if (facts?.idempotent) return startTool(p, facts, 0, env);
      // A crash interrupted a non-idempotent tool: its effect is unknown, never guessed.
      return finishCall(s, p, { ok: false, error: UNKNOWN_AFTER_CRASH }, 0, env);
    case 'approved':
      return startTool(p, facts, 0, env);
    case 'requested':
      break;
    default:
      return { events: [], effect: { type: 'continue' } };
  }
  // A `transfer_to_` name the agent in control does not list: a tool error the model reads (CONTRACT 16).
  if (!facts && p.tool_name.startsWith(HANDOFF_PREFIX)) {
    const message = `"${p.tool_name.slice(HANDOFF_PREFIX.length)}" is not an agent that "${currentAgentOf(s).id}" can hand off to`;
    return finishCall(s, p, { ok: false, error: { code: 'handoff_not_allowed', message, retryable: false } }, 0, env, { not_started: true });
  }
  if (p.rejection) {
    const by = p.rejection.decided_by;
    const why = p.rejection.reason ? `: ${p.rejection.reason}` : '';
    return finishCall(s, p, { ok: false, error: { code: 'tool_failed', message: `rejected by ${by}${why}`, retryable: false } }, 0, env, { silent: true });
  }
  if (facts?.risk === 'approve') {
    if (!env.approvalsAvailable) return finishCall(s, p, { ok: false, error: { code: 'tool_failed', message: 'approvals are not available', retryable: false } }, 0, env, { not_started: true });
    const approvalId = env.newId('apr');
    const expiresAt = env.now + (env.approvalTtlMs ?? 0);
    return {
      events: [
        { type: 'approval_opened', tool_call_id: p.tool_call_id, approval_id: approvalId, expires_at: expiresAt },
        { type: 'waiting', status: 'waiting_for_approval', reason: 'approval_required' },
      ],
      effect: { type: 'open_approval', call: p, approval_id: approvalId, expires_at: expiresAt },
    };
  }
  if (facts?.executor === 'client') {
    // Handed to the client: from here on it is executing (tool.started), until tool_outputs.
    return {
      events: [{ type: 'tool_handed_to_client', tool_call_id: p.tool_call_id }, { type: 'waiting', status: 'waiting_for_tool', reason: 'client_tool' }],
      effect: { type: 'wait', status: 'waiting_for_tool' },
    };
  }
  if (facts && s.usage.tool_calls + held(s).tool_calls >= s.limits.max_tool_calls) return { events: [finished('terminated', env.now, { reason: 'tool_budget' })], effect: { type: 'finish' } };
  if (facts?.handoff) return handOff(s, p, facts.handoff, env);
  if (facts?.subagent) return decideSubagentTool(s, p, facts.subagent, env);
  if (facts?.pause === 'input') return pauseForInput(s, p, env);
  if (facts?.pause === 'timer') return pauseOnTimer(s, p, env);
  return startTool(p, facts, 0, env);
}

/**
 * `transfer_to_<agent>` (CONTRACT 16): the call completes at once, the current agent's turn ends
 * and the run continues with the target's pinned instructions, model and tools (the history is
 * kept). The other calls of that turn are not run (the agent that asked for them no longer has
 * control): each fails `handed_off` for the model to read. The turn that asked was the step.
 */
function handOff(s: RunState, p: PendingToolCall, to: HandoffTarget, env: DecideEnv): Decision {
  const args = (p.arguments ?? {}) as { reason?: unknown };
  const reason = typeof args.reason === 'string' && args.reason !== '' ? args.reason : null;
  const target = { id: to.id, version: to.version };
  const events: RunEvent[] = [
    { type: 'tool_started', tool_call_id: p.tool_call_id, attempt: 1 },
    { type: 'tool_finished', tool_call_id: p.tool_call_id, result: { ok: true, result: { handed_off_to: target } }, duration_ms: 0, result_message_id: env.newId('msg') },
  ];
  const skipped = { code: 'handed_off', message: `not run: the conversation was handed off to "${to.id}"`, retryable: false };
  for (const q of s.state.pending) {
    if (q.tool_call_id === p.tool_call_id || q.status !== 'requested') continue;
    events.push({ type: 'tool_finished', tool_call_id: q.tool_call_id, result: { ok: false, error: skipped }, duration_ms: 0, result_message_id: env.newId('msg'), not_started: true });
  }
  events.push({ type: 'handed_off', tool_call_id: p.tool_call_id, from: { ...currentAgentOf(s) }, to: target, model: to.model, reason });
  return { events, effect: { type: 'continue' } };
}

// ---- subagents (CONTRACT 16) ----------------------------------------------------------------

/** What `wait_for_subagents` returns of each named subagent: its latest run's status and final text. */
function subagentResults(s: RunState, ids: readonly string[]) {
  const byId = new Map((s.state.subagents ?? []).map((c) => [c.id, c]));
  return ids.map((id) => {
    const c = byId.get(id)!;
    return { subagent_id: c.id, name: c.name, run_id: c.run_id, status: c.status, text: c.text };
  });
}

/** A subagent of this run by its id, or by its name (the model may use either). */
function findSubagent(known: readonly SubagentRef[], idOrName: unknown): SubagentRef | undefined {
  return known.find((c) => c.id === idOrName) ?? known.find((c) => c.name === idOrName);
}

/** A subagent tool call: start a subagent's run, wait for runs, or close one. */
function decideSubagentTool(s: RunState, p: PendingToolCall, facts: SubagentToolFacts, env: DecideEnv): Decision {
  const args = (p.arguments ?? {}) as Record<string, unknown>;
  const fail = (code: string, message: string) => finishCall(s, p, { ok: false, error: { code, message, retryable: false } }, 0, env, { not_started: true });
  const known = s.state.subagents ?? [];
  const active = known.filter((c) => !isTerminal(c.status)).length;
  const busy = () => fail('max_concurrent_subagents', `at most ${facts.max_concurrent} subagent runs of this run may be active at once; wait for one first`);
  // Every start of a subagent run (create or send) is one level down and one run more of the tree.
  const overLimit = (): Decision | null => {
    if (s.limits.max_subagent_depth <= 0) return fail('subagent_limit', `no more levels of subagents below this run (max_subagent_depth ${s.limits.max_subagent_depth} reached)`);
    if (treeRuns(s) + held(s).subagent_runs >= s.limits.max_subagents_per_run) {
      return fail('subagent_limit', `this run's tree started or holds all of its ${s.limits.max_subagents_per_run} subagent runs (max_subagents_per_run)`);
    }
    return null;
  };
  const begin = (subagent: { id: string | null; name: string; agent: AgentRef }, input: string): Decision => ({
    events: [{ type: 'tool_started', tool_call_id: p.tool_call_id, attempt: 1 }],
    effect: { type: 'start_subagent_run', call: { ...p, status: 'started', attempt: 1 }, subagent, input, ...subagentShare(s, env.now, startsLeftInTurn(s, env) + 1) },
  });
  switch (facts.op) {
    case 'create': {
      if (typeof args.instructions !== 'string' || args.instructions.trim() === '') return invalidArguments(s, p, 'create_subagent needs non-empty "instructions"', env);
      const me = currentAgentOf(s);
      let agent: AgentRef = me;
      if (args.agent_id !== undefined && args.agent_id !== me.id) {
        const listed = facts.agents?.find((a) => a.id === args.agent_id);
        if (!listed) return fail('subagent_not_allowed', `"${String(args.agent_id)}" is not an agent this agent may run as a subagent`);
        agent = listed;
      }
      if (active >= facts.max_concurrent) return busy();
      const limited = overLimit();
      if (limited) return limited;
      const name = typeof args.name === 'string' && args.name.trim() !== '' ? args.name.slice(0, 200) : `subagent_${known.length + 1}`;
      return begin({ id: null, name, agent: { ...agent } }, args.instructions);
    }
    case 'send': {
      const c = findSubagent(known, args.subagent_id);
      if (!c) return fail('subagent_not_found', `no subagent "${String(args.subagent_id)}" of this run`);
      if (typeof args.input !== 'string' || args.input.trim() === '') return invalidArguments(s, p, 'send_subagent_input needs a non-empty "input"', env);
      if (c.closed) return fail('subagent_closed', `subagent "${c.id}" is closed`);
      if (!isTerminal(c.status)) return fail('subagent_busy', `subagent "${c.id}" is still running ${c.run_id}; wait for it first`);
      if (active >= facts.max_concurrent) return busy();
      const limited = overLimit();
      if (limited) return limited;
      return begin({ id: c.id, name: c.name, agent: { ...c.agent } }, args.input);
    }
    case 'wait': {
      const named = Array.isArray(args.subagent_ids) ? (args.subagent_ids as unknown[]).map(String) : known.map((c) => c.id);
      const unknown = named.filter((id) => !findSubagent(known, id));
      const ids = named.map((id) => findSubagent(known, id)?.id ?? id);
      if (unknown.length > 0) return fail('subagent_not_found', `no subagent ${unknown.map((x) => `"${x}"`).join(', ')} of this run`);
      const timeout = typeof args.timeout_ms === 'number' && Number.isFinite(args.timeout_ms) && args.timeout_ms >= 0 ? args.timeout_ms : null;
      const running = ids.filter((id) => !isTerminal(known.find((c) => c.id === id)!.status));
      if (running.length === 0 || timeout === 0) {
        const done = finishCall(s, p, { ok: true, result: { timed_out: running.length > 0, subagents: subagentResults(s, ids) } }, 0, env);
        return { events: [{ type: 'tool_started', tool_call_id: p.tool_call_id, attempt: 1 }, ...done.events], effect: done.effect };
      }
      const until = Math.min(timeout !== null ? env.now + timeout : Number.POSITIVE_INFINITY, deadlineOf(s, env.now));
      return {
        events: [
          { type: 'subagents_awaited', tool_call_id: p.tool_call_id, subagent_ids: ids, at: env.now, until },
          { type: 'waiting', status: 'waiting_for_subagents', reason: 'subagents' },
        ],
        effect: { type: 'wait', status: 'waiting_for_subagents' },
      };
    }
    case 'close': {
      const c = findSubagent(known, args.subagent_id);
      if (!c) return fail('subagent_not_found', `no subagent "${String(args.subagent_id)}" of this run`);
      const done = finishCall(s, p, { ok: true, result: { subagent_id: c.id, status: 'closed' } }, 0, env);
      const events: RunEvent[] = [{ type: 'tool_started', tool_call_id: p.tool_call_id, attempt: 1 }, ...done.events];
      if (!c.closed) events.push({ type: 'subagent_closed', subagent_id: c.id });
      // Its active run, if any, is cancelled (closing stops it).
      if (!isTerminal(c.status)) events.push({ type: 'subagents_cancel_requested', run_ids: [c.run_id], reason: 'subagent_closed' });
      return { events, effect: done.effect };
    }
  }
}

/** The subagent's run was started: the call returns `{subagent_id, run_id}` at once, the parent goes on. */
function decideSubagentStarted(s: RunState, o: Extract<Observation, { type: 'subagent_run_started' }>, env: DecideEnv): Decision {
  const call = s.state.pending.find((p) => p.tool_call_id === o.tool_call_id);
  if (!call || call.status !== 'started') return { events: [], effect: { type: 'continue' } };
  const started: RunEvent = {
    type: 'subagent_run_started',
    tool_call_id: o.tool_call_id,
    subagent: { ...o.subagent, agent: { ...o.subagent.agent } },
    run_id: o.run_id,
    created: o.created,
    ...(o.allowance ? { allowance: { ...o.allowance } } : {}),
  };
  const done = finishCall(evolve(s, started), call, { ok: true, result: { subagent_id: o.subagent.id, run_id: o.run_id } }, 0, env);
  return { events: [started, ...done.events], effect: done.effect };
}

/**
 * A subagent's run ended: recorded (its usage counts toward this run's budgets) and, when this run
 * waits for subagents and every one it named has ended, the wait answers with their final texts
 * and statuses. A report of a run the parent does not know as its subagent's latest (late,
 * repeated) decides nothing.
 */
function decideSubagentEnded(s: RunState, o: SubagentOutcome, env: DecideEnv): Decision {
  const none: Decision = { events: [], effect: { type: 'none' } };
  const c = (s.state.subagents ?? []).find((x) => x.id === o.subagent_id && x.run_id === o.run_id);
  if (!c || isTerminal(c.status) || !isTerminal(o.status) || isTerminal(s.status)) return none;
  const ended: RunEvent = { type: 'subagent_ended', outcome: { ...o, usage: { ...o.usage } } };
  const after = evolve(s, ended);
  const call = s.status === 'waiting_for_subagents' ? pausedCall(s, 'awaiting_subagents') : undefined;
  const ids = (s.state.pause?.details.subagent_ids as string[] | undefined) ?? [];
  if (!call || ids.some((id) => !isTerminal((after.state.subagents ?? []).find((x) => x.id === id)?.status ?? 'completed'))) return { events: [ended], effect: { type: 'none' } };
  const resumed = resumeWith(after, call, { ok: true, result: { timed_out: false, subagents: subagentResults(after, ids) } }, env);
  return { events: [ended, ...resumed.events], effect: resumed.effect };
}

/**
 * An approval inside a subagent: shown once on this run's stream (`approval.requested` naming the
 * asking run), so that whoever watches the parent can decide it; the parent's status is unchanged.
 * Unknown subagents, an approval already shown and an ended parent decide nothing.
 */
function decideSubagentApproval(s: RunState, o: Extract<Observation, { type: 'subagent_approval_requested' }>): Decision {
  const c = (s.state.subagents ?? []).find((x) => x.id === o.subagent_id);
  if (!c || isTerminal(s.status) || (c.approvals ?? []).includes(o.approval.approval_id)) return { events: [], effect: { type: 'none' } };
  return { events: [{ type: 'subagent_approval_relayed', subagent_id: c.id, approval: { ...o.approval } }], effect: { type: 'none' } };
}

/** The waiting status (and `run.waiting` reason) of a call that awaits something. */
const WAIT_OF: Record<'awaiting_approval' | 'awaiting_client' | 'awaiting_input' | 'awaiting_callback' | 'awaiting_timer' | 'awaiting_subagents', [WaitingStatus, WaitReason]> = {
  awaiting_subagents: ['waiting_for_subagents', 'subagents'],
  awaiting_approval: ['waiting_for_approval', 'approval_required'],
  awaiting_client: ['waiting_for_tool', 'client_tool'],
  awaiting_input: ['waiting_for_input', 'input_required'],
  awaiting_callback: ['waiting_for_callback', 'callback'],
  awaiting_timer: ['waiting_for_timer', 'timer'],
};

/**
 * The call's next attempt. Its start is committed before it runs unless the tool is idempotent
 * (the registry's word, as for a take-over above: what a crash would do decides what must be
 * durable first).
 */
function startTool(p: PendingToolCall, facts: ToolFacts | null, delayMs = 0, env?: DecideEnv): Decision {
  const attempt = p.attempt + 1;
  // A tool that may answer by callback: each attempt gets its own token, whose hash is durable
  // before the tool runs (its callback may come before its 202 does).
  const secret = facts?.callback_timeout_ms !== undefined && env?.newSecret ? env.newSecret() : null;
  return {
    events: [{ type: 'tool_started', tool_call_id: p.tool_call_id, attempt, ...(secret ? { callback_token_hash: secret.hash } : {}) }],
    effect: {
      type: 'run_tool',
      call: { ...p, status: 'started', attempt, ...(secret ? { callback_token_hash: secret.hash } : {}) },
      attempt,
      commit_start_first: facts?.idempotent !== true || secret !== null,
      ...(delayMs > 0 ? { delay_ms: delayMs } : {}),
      ...(secret ? { callback_token: secret.token } : {}),
    },
  };
}

function decideModelTurn(s: RunState, o: Extract<Observation, { type: 'model_turn_ended' }>, env: DecideEnv): Decision {
  const now = env.now;
  const deadline = deadlineOf(s, now);
  const content: ContentPart[] = [];
  if (o.text) content.push({ type: 'text', text: o.text });
  for (const c of o.tool_calls) content.push({ type: 'tool_call', tool_call_id: c.id, tool_name: c.name, arguments: c.arguments });
  const cancelled = (o.cancel_signalled ?? false) && (o.failure === null || o.aborted) && now < deadline;
  const hitDeadline = now >= deadline && (o.failure !== null || o.aborted);
  const status = o.failure || cancelled || hitDeadline ? (cancelled ? 'cancelled' : 'failed') : 'completed';
  const events: RunEvent[] = [{ type: 'turn_ended', message_id: o.message_id, content, status, usage: o.usage, redo: false }];
  const used = tokensUsed(s.usage) + held(s).total_tokens + o.usage.input_tokens + o.usage.output_tokens;
  const end = (e: RunEvent): Decision => ({ events: [...events, e], effect: { type: 'finish' } });
  if (cancelled) return end(finished('cancelled', now));
  if (hitDeadline) return end(finished('terminated', now, { reason: 'deadline' }));
  if (o.failure) return end(finished('failed', now, { error: o.failure }));
  // Over the token budget: never reported completed, and no tool of this turn runs.
  if (s.limits.max_total_tokens !== null && used > s.limits.max_total_tokens) {
    return end(finished('terminated', now, { reason: 'token_budget', final_message_id: o.tool_calls.length === 0 ? o.message_id : null }));
  }
  if (o.tool_calls.length === 0) {
    // Input steered during the turn: the run goes on and its next turn takes it (if it may).
    if (s.inbox.length > 0 && s.stepCount < s.limits.max_steps) return { events, effect: { type: 'continue' } };
    return end(finished('completed', now, { final_message_id: o.message_id }));
  }
  const calls: PendingToolCall[] = o.tool_calls.map((c) => {
    const f = env.tool(c.name);
    return { tool_call_id: c.id, tool_name: c.name, arguments: c.arguments, risk: f?.risk ?? null, executor: f?.executor ?? null, idempotent: f?.idempotent ?? false, status: 'requested', attempt: 0 };
  });
  events.push({ type: 'tools_requested', calls });
  return { events, effect: { type: 'continue' } };
}

function decideToolFinished(s: RunState, o: Extract<Observation, { type: 'tool_finished' }>, env: DecideEnv): Decision {
  const call = s.state.pending.find((p) => p.tool_call_id === o.tool_call_id);
  if (!call || call.status !== 'started') return { events: [], effect: { type: 'continue' } };
  const r = o.result;
  // Only idempotent tools are run again (CONTRACT section 13): a retry repeats the side-effect key.
  const facts = env.tool(call.tool_name);
  // A retry waits first (backoff with jitter) and only if the wait ends before the run's deadline.
  const delay = toolRetryDelayMs(call.tool_call_id, call.attempt);
  const retry =
    !r.ok && r.error.retryable === true && facts?.idempotent === true && call.attempt < MAX_TOOL_ATTEMPTS && !o.cancel_signalled && env.now + delay < deadlineOf(s, env.now);
  if (retry) return startTool(call, facts, delay, env);
  return finishCall(s, call, r, o.duration_ms, env);
}

function decideApproval(s: RunState, o: Extract<Observation, { type: 'approval_decided' }>): Decision {
  const call = s.state.pending.find((p) => p.tool_call_id === o.tool_call_id);
  if (s.status !== 'waiting_for_approval' || !call || call.status !== 'awaiting_approval') {
    throw new DomainError('approval_not_pending', 'the run is not waiting for this approval', { approval_id: o.approval_id, run_status: s.status });
  }
  const events: RunEvent[] = [{ type: 'approval_decided', approval_id: o.approval_id, tool_call_id: o.tool_call_id, decision: o.decision, decided_by: o.decided_by, reason: o.reason }];
  const stillOpen = s.state.pending.some((p) => p.status === 'awaiting_approval' && p.tool_call_id !== o.tool_call_id);
  if (stillOpen) return { events, effect: { type: 'none' } };
  events.push({ type: 'resumed' });
  return { events, effect: { type: 'resume' } };
}

function decideClientOutputs(s: RunState, o: Extract<Observation, { type: 'client_tool_outputs' }>, env: DecideEnv): Decision {
  notFinished(s);
  const pending = new Map(s.state.pending.filter((p) => p.status === 'awaiting_client').map((p) => [p.tool_call_id, p]));
  const ids = o.outputs.map((x) => x.tool_call_id);
  const unexpected = ids.filter((id, i) => !pending.has(id) || ids.indexOf(id) !== i);
  if (s.status !== 'waiting_for_tool' || unexpected.length > 0) {
    throw new DomainError('tool_output_not_expected', 'these tool calls are not waiting for a client output', {
      run_id: s.id,
      run_status: s.status,
      tool_call_ids: s.status !== 'waiting_for_tool' ? ids : unexpected,
      pending_tool_call_ids: [...pending.keys()],
    });
  }
  const duration = env.now - s.updatedAt.getTime();
  const events: RunEvent[] = o.outputs.map((x) => ({
    type: 'tool_finished',
    tool_call_id: x.tool_call_id,
    result: x.error ? { ok: false, error: { code: x.error.code ?? 'tool_failed', message: x.error.message, retryable: false } } : { ok: true, result: x.output ?? null },
    duration_ms: duration,
    result_message_id: env.newId('msg'),
  }));
  if (pending.size > o.outputs.length) return { events, effect: { type: 'none' } };
  events.push({ type: 'resumed' });
  return { events, effect: { type: 'resume' } };
}

function decideCancel(s: RunState, o: Extract<Observation, { type: 'cancel_requested' }>, now: number): Decision {
  if (s.status === 'cancelled' || s.status === 'cancelling') return { events: [], effect: { type: 'none' } };
  notFinished(s);
  const events: RunEvent[] = [{ type: 'cancel_requested', requested_by: o.requested_by, at: now, ...(o.reason ? { reason: o.reason } : {}) }];
  // Cancel cascades (CONTRACT 16): the subagents' active runs are cancelled with it.
  const active = (s.state.subagents ?? []).filter((c) => !isTerminal(c.status)).map((c) => c.run_id);
  if (active.length > 0) events.push({ type: 'subagents_cancel_requested', run_ids: active, reason: 'parent_cancelled' });
  // A running run stops its model call or tool first; queued and waiting runs execute nothing.
  if (s.status === 'running') return { events, effect: { type: 'none' } };
  events.push(finished('cancelled', now));
  return { events, effect: { type: 'finish' } };
}


// ---- pauses (CONTRACT 17): input, callback, timer, quota ----------------------------------
// Each pause is a status, the saved `pause` (with its `wake_at`) and the rules below; its answer
// comes as an observation through the one write path (apply-to-run), like approvals.

/** Default of `INPUT_TTL_MS` when the environment gives none. */
export const DEFAULT_INPUT_TTL_MS = 24 * 3_600_000;
/** Default `callback_timeout_ms` of a tool that may answer by callback. */
export const DEFAULT_CALLBACK_TIMEOUT_MS = 3_600_000;
/** The longest `wait` (its seconds); anything longer is bounded by the run's deadline anyway. */
const MAX_WAIT_SECONDS = 366 * 24 * 3600;

const iso = (ms: number) => new Date(ms).toISOString();

function invalidArguments(s: RunState, p: PendingToolCall, message: string, env: DecideEnv): Decision {
  return finishCall(s, p, { ok: false, error: { code: 'invalid_tool_arguments', message, retryable: false } }, 0, env, { not_started: true });
}

/** `ask_user {question}`: the run waits for the session's next user input. */
function pauseForInput(s: RunState, p: PendingToolCall, env: DecideEnv): Decision {
  const args = (p.arguments ?? {}) as { question?: unknown };
  if (typeof args.question !== 'string' || args.question.trim() === '') return invalidArguments(s, p, 'ask_user needs a non-empty "question"', env);
  const expiresAt = env.now + (env.inputTtlMs ?? DEFAULT_INPUT_TTL_MS);
  return {
    events: [
      { type: 'input_requested', tool_call_id: p.tool_call_id, question: args.question, at: env.now, expires_at: expiresAt },
      { type: 'waiting', status: 'waiting_for_input', reason: 'input_required' },
    ],
    effect: { type: 'wait', status: 'waiting_for_input' },
  };
}

/**
 * `wait {seconds}` / `wait_until {time}`: the run sleeps until then, at most until its deadline
 * (a later time ends the run with `deadline` when the deadline comes). A time already past
 * answers at once.
 */
function pauseOnTimer(s: RunState, p: PendingToolCall, env: DecideEnv): Decision {
  const args = (p.arguments ?? {}) as { seconds?: unknown; time?: unknown };
  let requested: number;
  if (args.time !== undefined) {
    requested = typeof args.time === 'string' && /^\d{4}-\d\d-\d\dT/.test(args.time) ? Date.parse(args.time) : NaN;
    if (!Number.isFinite(requested)) return invalidArguments(s, p, 'wait_until needs "time" as an ISO 8601 date-time', env);
  } else {
    const seconds = args.seconds;
    if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0 || seconds > MAX_WAIT_SECONDS) {
      return invalidArguments(s, p, `wait needs "seconds" between 0 and ${MAX_WAIT_SECONDS}`, env);
    }
    requested = env.now + Math.round(seconds * 1000);
  }
  if (requested <= env.now) {
    const done = finishCall(s, p, { ok: true, result: { waited_until: iso(requested), waited_ms: 0 } }, 0, env);
    return { events: [{ type: 'tool_started', tool_call_id: p.tool_call_id, attempt: 1 }, ...done.events], effect: done.effect };
  }
  const until = Math.min(requested, deadlineOf(s, env.now));
  return {
    events: [
      { type: 'timer_set', tool_call_id: p.tool_call_id, at: env.now, until, requested_until: requested },
      { type: 'waiting', status: 'waiting_for_timer', reason: 'timer' },
    ],
    effect: { type: 'wait', status: 'waiting_for_timer' },
  };
}

/** The tenant's spend limit is reached before a model call: wait (looked at again every QUOTA_RECHECK_MS, and when the window rolls over). */
function pauseForQuota(q: Extract<QuotaStatus, { exceeded: true }>, now: number): Decision {
  return {
    events: [
      { type: 'quota_reached', at: now, resets_at: q.resets_at, details: q.details },
      { type: 'waiting', status: 'waiting_for_quota', reason: 'quota' },
    ],
    effect: { type: 'wait', status: 'waiting_for_quota' },
  };
}

/** The call a pause waits on, if it still does. */
function pausedCall(s: RunState, status: PendingToolCall['status']): PendingToolCall | undefined {
  const id = s.state.pause?.tool_call_id;
  return s.state.pending.find((p) => p.tool_call_id === id && p.status === status);
}

/** A waiting call gets its result and the run resumes (`resumed` first: a loop it closes ends a running run). */
function resumeWith(s: RunState, call: PendingToolCall, result: ToolResult, env: DecideEnv): Decision {
  const resumed: RunEvent = { type: 'resumed' };
  const since = s.state.pause ? Date.parse(s.state.pause.since) : env.now;
  const done = finishCall(evolve(s, resumed), call, result, Math.max(0, env.now - since), env);
  return { events: [resumed, ...done.events], effect: done.effect.type === 'finish' ? done.effect : { type: 'resume' } };
}

/** The next user input answers `ask_user`: the same run continues with it as the tool's result. */
function decideInputAnswer(s: RunState, o: Extract<Observation, { type: 'input_answered' }>, env: DecideEnv): Decision {
  const call = s.status === 'waiting_for_input' ? pausedCall(s, 'awaiting_input') : undefined;
  if (!call) return { events: [], effect: { type: 'none' } };
  return resumeWith(s, call, { ok: true, result: { answer: o.text, message_id: o.message_id } }, env);
}

/** Constant-time equality of two hex digests (no early exit on the first difference). */
function sameDigest(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/**
 * A tool's result by callback: expected while the call awaits it, or while it is still executing
 * (the callback came before the tool's 202 did); authorised by the call's token or an admin.
 * Anything else (late, repeated, unknown) is 409 `callback_not_expected`.
 */
function decideCallback(s: RunState, o: Extract<Observation, { type: 'callback_received' }>, env: DecideEnv): Decision {
  const call = s.state.pending.find((p) => p.tool_call_id === o.tool_call_id);
  const waiting = s.status === 'waiting_for_callback' && call?.status === 'awaiting_callback';
  const executing = (s.status === 'running' || s.status === 'cancelling') && call?.status === 'started' && call.callback_token_hash !== undefined;
  if (!call || !(waiting || executing)) {
    throw new DomainError('callback_not_expected', 'this tool call does not wait for a callback', { run_id: s.id, tool_call_id: o.tool_call_id, run_status: s.status });
  }
  if (!o.admin && !(call.callback_token_hash && o.token_hash && sameDigest(call.callback_token_hash, o.token_hash))) {
    throw new DomainError('unauthorized', 'the Callback-Token does not belong to this tool call');
  }
  const result: ToolResult = o.error
    ? { ok: false, error: { code: o.error.code ?? 'tool_failed', message: o.error.message, retryable: false } }
    : { ok: true, result: o.output ?? null };
  if (waiting) return resumeWith(s, call, result, env);
  // Still executing here: recorded now; the executor's own outcome then finds the call resolved.
  const done = finishCall(s, call, result, Math.max(0, env.now - s.updatedAt.getTime()), env);
  return { events: done.events, effect: done.effect.type === 'finish' ? done.effect : { type: 'none' } };
}

/** The tool answered `202 {"callback": true}`: the run waits for the callback (or its timeout). */
function decideDeferred(s: RunState, o: Extract<Observation, { type: 'tool_deferred' }>, env: DecideEnv): Decision {
  const call = s.state.pending.find((p) => p.tool_call_id === o.tool_call_id);
  // Its callback came first, or the run is being cancelled (the cancel rule decides the call).
  if (!call || call.status !== 'started' || s.status !== 'running' || s.cancelRequestedAt !== null) return { events: [], effect: { type: 'continue' } };
  const timeout = env.tool(call.tool_name)?.callback_timeout_ms ?? DEFAULT_CALLBACK_TIMEOUT_MS;
  return {
    events: [
      { type: 'callback_awaited', tool_call_id: call.tool_call_id, at: env.now, expires_at: env.now + timeout },
      { type: 'waiting', status: 'waiting_for_callback', reason: 'callback' },
    ],
    effect: { type: 'wait', status: 'waiting_for_callback' },
  };
}

/**
 * A waiting run's `wake_at` came: the timer rings (or the deadline came first: `terminated`), an
 * unanswered input expires the run, a callback that did not come fails its call (`tool_timeout`),
 * a quota wait resumes when the limit allows. Before its time, or once the run no longer waits
 * (answered, cancelled), nothing: a node that wakes the run late or twice changes nothing.
 */
function decideWake(s: RunState, env: DecideEnv): Decision {
  const none: Decision = { events: [], effect: { type: 'none' } };
  const pause = s.state.pause;
  if (!pause || !isWaiting(s.status)) return none;
  const now = env.now;
  const due = pause.until !== null && now >= Date.parse(pause.until);
  switch (s.status) {
    case 'waiting_for_timer': {
      const call = pausedCall(s, 'awaiting_timer');
      if (!call || !due) return none;
      const requested = Number(pause.details.requested_until_ms ?? Date.parse(pause.until!));
      if (requested > Date.parse(pause.until!)) return { events: [{ type: 'resumed' }, finished('terminated', now, { reason: 'deadline' })], effect: { type: 'finish' } };
      return resumeWith(s, call, { ok: true, result: { waited_until: pause.until, waited_ms: Math.max(0, Date.parse(pause.until!) - Date.parse(pause.since)) } }, env);
    }
    case 'waiting_for_input':
      if (!due) return none;
      return { events: [finished('expired', now, { error: { code: 'input_expired', message: 'the question to the user was not answered in time' } })], effect: { type: 'finish' } };
    case 'waiting_for_callback': {
      const call = pausedCall(s, 'awaiting_callback');
      if (!call || !due) return none;
      return resumeWith(s, call, { ok: false, error: { code: 'tool_timeout', message: 'no callback within the tool\'s callback_timeout_ms', retryable: false } }, env);
    }
    case 'waiting_for_quota':
      if (!env.quota || env.quota.exceeded) return none;
      return { events: [{ type: 'resumed' }], effect: { type: 'resume' } };
    case 'waiting_for_subagents': {
      // timeout_ms passed: the call answers with what is known, marked timed out.
      const call = pausedCall(s, 'awaiting_subagents');
      if (!call || !due) return none;
      const ids = (pause.details.subagent_ids as string[] | undefined) ?? [];
      return resumeWith(s, call, { ok: true, result: { timed_out: true, subagents: subagentResults(s, ids) } }, env);
    }
    default:
      return none;
  }
}

/** The pause an event starts (evolve). */
function pauseOf(e: RunEvent): RunPause | null {
  switch (e.type) {
    case 'input_requested':
      return { reason: 'input', since: iso(e.at), until: iso(e.expires_at), wake_at: iso(e.expires_at), tool_call_id: e.tool_call_id, details: { question: e.question } };
    case 'timer_set':
      return {
        reason: 'timer',
        since: iso(e.at),
        until: iso(e.until),
        wake_at: iso(e.until),
        tool_call_id: e.tool_call_id,
        details: { requested_until: iso(e.requested_until), requested_until_ms: e.requested_until },
      };
    case 'callback_awaited':
      return { reason: 'callback', since: iso(e.at), until: iso(e.expires_at), wake_at: iso(e.expires_at), tool_call_id: e.tool_call_id, details: {} };
    case 'quota_reached':
      return { reason: 'quota', since: iso(e.at), until: iso(e.resets_at), wake_at: iso(Math.min(e.resets_at, e.at + QUOTA_RECHECK_MS)), tool_call_id: null, details: e.details };
    case 'subagents_awaited':
      // Looked at every SUBAGENT_RECHECK_MS too: a child's end whose report was lost (a crash right after its commit) is read then.
      return { reason: 'subagents', since: iso(e.at), until: iso(e.until), wake_at: iso(Math.min(e.until, e.at + SUBAGENT_RECHECK_MS)), tool_call_id: e.tool_call_id, details: { subagent_ids: [...e.subagent_ids] } };
    default:
      return null;
  }
}

/**
 * Follow-up is FIFO (CONTRACT section 7): input steered to a run that ended before taking it is
 * never dropped, and ALL of it goes, in commit order, into ONE queued run. `leftover` is the ended
 * run's inbox, which is in commit order (a steer appends to it holding the session lock); an input
 * listed twice counts once. No inversion is possible: one run, one ordered list, no inserts racing.
 * Null when nothing is left over.
 */
export function followUpRun(leftover: readonly SteeredInput[]): FollowUpRun | null {
  const ordered = onceEach(leftover);
  if (ordered.length === 0) return null;
  const [first, ...rest] = ordered;
  return { first, rest };
}

/** The inputs in their order, an input listed twice once. */
function onceEach(inputs: readonly SteeredInput[]): SteeredInput[] {
  const seen = new Set<string>();
  return inputs.filter((i) => !seen.has(i.message_id) && seen.add(i.message_id) !== undefined);
}

/**
 * What becomes of the input an ended run did not take. A run that just COMPLETED (its last turn
 * asked for no tool) with steps left does not end: the input steered while it was ending is taken
 * by another turn of the same run (`take_leftovers`: the end is retracted before it commits), as
 * input steered during the turn is. So under continuous input a run keeps taking it until it may
 * not (a limit, a failure, a cancel); only then do its leftovers go to ONE follow-up run (see
 * `followUpRun`), which takes what arrives while it runs the same way. A run that has not ended
 * (waiting, cancelling) keeps its inbox for its next turn.
 */
function decideLeftovers(s: RunState, leftover: readonly SteeredInput[]): Decision {
  // The owner's access was revoked: a follow-up run would fail the same way; nothing is taken.
  if (isTerminal(s.status) && s.error?.code === 'access_revoked' && leftover.length > 0) return { events: [], effect: { type: 'reject_inputs', inputs: [...leftover] } };
  const mayGoOn = s.status === 'completed' && s.stepCount < s.limits.max_steps;
  if (mayGoOn && leftover.length > 0) return { events: [], effect: { type: 'take_leftovers', inputs: onceEach(leftover) } };
  const run = isTerminal(s.status) ? followUpRun(leftover) : null;
  return { events: [], effect: run ? { type: 'queue_follow_up', run } : { type: 'none' } };
}

/** `concurrency` of a new run's request (CONTRACT section 7); absent: the session's default. */
export type ConcurrencyMode = 'reject' | 'enqueue' | 'steer' | 'interrupt';

/**
 * What a new input does to its session (CONTRACT section 7): `queue` a new run (it starts when
 * the session's earlier runs ended), `reject` it (409 session_busy), `steer` it to the active run,
 * or `interrupt` the active run (cancel it) and queue a new one. The run's SQL carries `queue` out
 * guarded by its precondition (no active run, or the mode is enqueue) and asks again when that fails.
 */
export function admit(requested: ConcurrencyMode | undefined, session: { hasActiveRun: boolean; defaultConcurrency: ConcurrencyMode }): 'queue' | 'reject' | 'steer' | 'interrupt' {
  if (!session.hasActiveRun) return 'queue';
  const mode = requested ?? session.defaultConcurrency;
  return mode === 'enqueue' ? 'queue' : mode;
}

export function decide(s: RunState, o: Observation, env: DecideEnv): Decision {
  return endingEndsSubagents(s, decideOnly(s, o, env));
}

/**
 * A run that ends (any terminal status) ends its subagents' active runs: they are cancelled
 * (`parent_ended`) by the same commit's cascade, as a cancelled parent's are (its cancel already
 * asked, `parent_cancelled`). A subagent whose end this decision records is not asked again.
 */
function endingEndsSubagents(s: RunState, d: Decision): Decision {
  if (isTerminal(s.status) || s.cancelRequestedAt !== null || !d.events.some((e) => e.type === 'finished')) return d;
  const settled = new Set<string>();
  for (const e of d.events) {
    if (e.type === 'subagents_cancel_requested') e.run_ids.forEach((id) => settled.add(id));
    if (e.type === 'subagent_ended') settled.add(e.outcome.run_id);
  }
  const active = (s.state.subagents ?? []).filter((c) => !isTerminal(c.status) && !settled.has(c.run_id)).map((c) => c.run_id);
  if (active.length === 0) return d;
  return { ...d, events: [...d.events, { type: 'subagents_cancel_requested', run_ids: active, reason: 'parent_ended' }] };
}

function decideOnly(s: RunState, o: Observation, env: DecideEnv): Decision {
  switch (o.type) {
    case 'tick':
      return decideNext(s, env, o.cancel_signalled ?? false);
    case 'lease_resumed':
      return decideNext(s, env, false);
    case 'interrupted_turn_read': {
      // A cancel that landed mid-turn: the call was made (it counts) and the message is
      // `cancelled`. A crash or lost lease: the turn is redone, its message `failed`.
      const cancelled = s.cancelRequestedAt !== null || s.status === 'cancelling';
      const usage = { input_tokens: 0, output_tokens: 0, cached_input_tokens: 0 };
      return { events: [{ type: 'turn_ended', message_id: o.message_id, content: o.content, status: cancelled ? 'cancelled' : 'failed', usage, redo: !cancelled }], effect: { type: 'continue' } };
    }
    case 'model_turn_ended':
      return decideModelTurn(s, o, env);
    case 'tool_finished':
      return decideToolFinished(s, o, env);
    case 'approval_decided':
      return decideApproval(s, o);
    case 'client_tool_outputs':
      return decideClientOutputs(s, o, env);
    case 'cancel_requested':
      return decideCancel(s, o, env.now);
    case 'input_steered': {
      const known = (id: string) => s.inbox.some((i) => i.message_id === id) || s.state.inputs.some((i) => i.message_id === id);
      const fresh = o.inputs.filter((i) => !known(i.message_id));
      if (isTerminal(s.status) || fresh.length === 0) return { events: [], effect: { type: 'none' } };
      return { events: fresh.map((input) => ({ type: 'input_received', input })), effect: { type: 'none' } };
    }
    case 'queue_expired':
      if (s.status !== 'queued') return { events: [], effect: { type: 'none' } };
      return { events: [finished('expired', env.now, { error: null })], effect: { type: 'finish' } };
    case 'approval_expired': {
      const waits = s.status === 'waiting_for_approval' && s.state.pending.some((p) => p.status === 'awaiting_approval' && p.approval_id === o.approval_id);
      if (!waits) return { events: [], effect: { type: 'none' } };
      const error = { code: 'approval_expired' as const, message: `approval ${o.approval_id} was not decided in time` };
      return { events: [finished('expired', env.now, { error })], effect: { type: 'finish' } };
    }
    case 'input_answered':
      return decideInputAnswer(s, o, env);
    case 'callback_received':
      return decideCallback(s, o, env);
    case 'tool_deferred':
      return decideDeferred(s, o, env);
    case 'wake':
      return decideWake(s, env);
    case 'leftover_inputs':
      return decideLeftovers(s, o.inputs);
    case 'subagent_run_started':
      return decideSubagentStarted(s, o, env);
    case 'subagent_ended':
      return decideSubagentEnded(s, o.outcome, env);
    case 'subagent_approval_requested':
      return decideSubagentApproval(s, o);
    case 'failed_unexpectedly': {
      if (isTerminal(s.status)) return { events: [], effect: { type: 'finish' } };
      const events: RunEvent[] = [];
      const open = s.state.streaming_message_id;
      if (open) events.push({ type: 'turn_ended', message_id: open, content: [], status: 'failed', usage: { input_tokens: 0, output_tokens: 0, cached_input_tokens: 0 }, redo: true });
      events.push(finished('failed', env.now, { error: { code: 'internal_error', message: 'the run failed unexpectedly' } }));
      return { events, effect: { type: 'finish' } };
    }
  }
}

// ---- evolve -------------------------------------------------------------------------------

function moved(s: RunState, to: RunStatus): RunStatus {
  if (!canMove(s.status, to)) {
    throw new DomainError('run_finished', `a ${s.status} run cannot become ${to}`, { run_id: s.id, status: s.status }, s.id);
  }
  return to;
}

function patchCall(s: RunState, id: string, patch: Partial<PendingToolCall>): PendingToolCall[] {
  if (!s.state.pending.some((p) => p.tool_call_id === id)) throw new Error(`no pending tool call ${id}`);
  return s.state.pending.map((p) => (p.tool_call_id === id ? { ...p, ...patch } : p));
}

function withState(s: RunState, state: Partial<RunState['state']>, more: Partial<RunState> = {}): RunState {
  return { ...s, ...more, state: { ...s.state, ...state } };
}

/** Applies one event. The status machine of CONTRACT section 7 holds here: an illegal move throws. */
export function evolve(s: RunState, e: RunEvent): RunState {
  switch (e.type) {
    case 'started': {
      const begun: RunState = { ...s, status: moved(s, 'running'), startedAt: new Date(e.at) };
      return e.agent ? { ...begun, model: e.agent.model, state: { ...s.state, current_agent: { id: e.agent.id, version: e.agent.version } } } : begun;
    }
    case 'handed_off':
      return withState(s, { current_agent: { ...e.to } }, { model: e.model });
    case 'input_received':
      return { ...s, inbox: [...s.inbox, e.input] };
    case 'input_taken':
      return withState(
        s,
        { inputs: [...s.state.inputs, { message_id: e.message_id, before: null }], input_call_base: s.usage.model_calls },
        { inbox: s.inbox.filter((i) => i.message_id !== e.message_id) },
      );
    case 'turn_begun':
      // Inputs taken for this turn sit right before its message in the model context.
      return withState(s, { streaming_message_id: e.message_id, inputs: s.state.inputs.map((i) => (i.before === null ? { ...i, before: e.message_id } : i)) }, { stepCount: s.stepCount + 1 });
    case 'delta_streamed':
      return s;
    case 'turn_ended': {
      const u = s.usage;
      const usage = e.redo
        ? u
        : {
            ...u,
            model_calls: u.model_calls + 1,
            input_tokens: u.input_tokens + e.usage.input_tokens,
            output_tokens: u.output_tokens + e.usage.output_tokens,
            cached_input_tokens: u.cached_input_tokens + e.usage.cached_input_tokens,
            reasoning_tokens: u.reasoning_tokens + (e.usage.reasoning_tokens ?? 0),
            estimated_cost: e.usage.cost ? { ...u.estimated_cost, amount: addAmounts(u.estimated_cost.amount, e.usage.cost) } : u.estimated_cost,
          };
      // A redone turn's inputs go with the turn that redoes it.
      const inputs = e.redo ? s.state.inputs.map((i) => (i.before === e.message_id ? { ...i, before: null } : i)) : s.state.inputs;
      return withState(s, { streaming_message_id: null, inputs }, { usage, stepCount: e.redo ? Math.max(0, s.stepCount - 1) : s.stepCount });
    }
    case 'tools_requested':
      return withState(s, { pending: e.calls.map((c) => ({ ...c })) });
    case 'pending_cleared':
      return withState(s, { pending: [] });
    case 'tool_started': {
      const usage = e.attempt === 1 ? { ...s.usage, tool_calls: s.usage.tool_calls + 1 } : s.usage;
      const patch: Partial<PendingToolCall> = { status: 'started', attempt: e.attempt, ...(e.callback_token_hash ? { callback_token_hash: e.callback_token_hash } : {}) };
      return withState(s, { pending: patchCall(s, e.tool_call_id, patch) }, { usage });
    }
    case 'input_requested':
    case 'timer_set': {
      // The call is executing from here on (tool.started): the run waits for its answer.
      const status = e.type === 'input_requested' ? 'awaiting_input' : 'awaiting_timer';
      const usage = { ...s.usage, tool_calls: s.usage.tool_calls + 1 };
      return withState(s, { pending: patchCall(s, e.tool_call_id, { status, attempt: 1 }), pause: pauseOf(e) }, { usage });
    }
    case 'callback_awaited':
      return withState(s, { pending: patchCall(s, e.tool_call_id, { status: 'awaiting_callback' }), pause: pauseOf(e) });
    case 'quota_reached':
      return withState(s, { pause: pauseOf(e) });
    case 'tool_handed_to_client':
      return withState(s, { pending: patchCall(s, e.tool_call_id, { status: 'awaiting_client', attempt: 1 }) }, { usage: { ...s.usage, tool_calls: s.usage.tool_calls + 1 } });
    case 'tool_finished': {
      const call = s.state.pending.find((p) => p.tool_call_id === e.tool_call_id)!;
      const patch: Partial<PendingToolCall> = e.result.ok ? { status: 'completed', ok: true, result: e.result.result } : { status: 'failed', ok: false, error: e.result.error };
      const loop = [...s.state.loop_window, loopSignature(call, e.result)].slice(-LOOP_WINDOW);
      return withState(s, { pending: patchCall(s, e.tool_call_id, patch), loop_window: loop });
    }
    case 'approval_opened':
      return withState(s, { pending: patchCall(s, e.tool_call_id, { status: 'awaiting_approval', approval_id: e.approval_id, approval_expires_at: e.expires_at }) });
    case 'approval_decided':
      return withState(s, {
        pending: patchCall(s, e.tool_call_id, e.decision === 'approve' ? { status: 'approved' } : { status: 'requested', rejection: { reason: e.reason, decided_by: e.decided_by } }),
      });
    case 'waiting':
      return { ...s, status: moved(s, e.status) };
    case 'resumed':
      return { ...s, status: moved(s, 'running'), state: s.state.pause ? { ...s.state, pause: null } : s.state };
    case 'cancel_requested':
      return { ...s, cancelRequestedAt: new Date(e.at), status: s.status === 'running' ? moved(s, 'cancelling') : s.status };
    case 'subagent_run_started': {
      const known = s.state.subagents ?? [];
      const prev = known.find((c) => c.id === e.subagent.id);
      const entry: SubagentRef = {
        id: e.subagent.id,
        name: e.subagent.name,
        agent: { ...e.subagent.agent },
        run_id: e.run_id,
        status: 'queued',
        text: null,
        closed: prev?.closed ?? false,
        ...(e.allowance ? { allowance: { ...e.allowance } } : {}),
      };
      return withState(s, { subagents: prev ? known.map((c) => (c.id === entry.id ? entry : c)) : [...known, entry], subagent_runs: treeRuns(s) + 1 });
    }
    case 'subagents_awaited':
      return withState(s, { pending: patchCall(s, e.tool_call_id, { status: 'awaiting_subagents', attempt: 1 }), pause: pauseOf(e) }, { usage: { ...s.usage, tool_calls: s.usage.tool_calls + 1 } });
    case 'subagent_ended': {
      // The subagent's usage counts toward this run's budgets (CONTRACT 16); its model calls are its own.
      const o = e.outcome;
      const u = s.usage;
      const usage = {
        ...u,
        input_tokens: u.input_tokens + o.usage.input_tokens,
        output_tokens: u.output_tokens + o.usage.output_tokens,
        cached_input_tokens: u.cached_input_tokens + o.usage.cached_input_tokens,
        tool_calls: u.tool_calls + o.usage.tool_calls,
        estimated_cost: o.usage.cost ? { ...u.estimated_cost, amount: addAmounts(u.estimated_cost.amount, o.usage.cost) } : u.estimated_cost,
      };
      const subagents = (s.state.subagents ?? []).map((c) => (c.id === o.subagent_id && c.run_id === o.run_id ? { ...c, status: o.status, text: o.text } : c));
      return withState(s, { subagents, subagent_runs: treeRuns(s) + (o.usage.subagent_runs ?? 0) }, { usage });
    }
    case 'subagent_closed':
      return withState(s, { subagents: (s.state.subagents ?? []).map((c) => (c.id === e.subagent_id ? { ...c, closed: true } : c)) });
    case 'subagent_approval_relayed':
      return withState(s, { subagents: (s.state.subagents ?? []).map((c) => (c.id === e.subagent_id ? { ...c, approvals: [...(c.approvals ?? []), e.approval.approval_id] } : c)) });
    case 'subagents_cancel_requested':
      return s;
    case 'finished': {
      const from = e.status === 'cancelled' && s.status === 'running' ? 'cancelling' : s.status;
      const status = moved({ ...s, status: from }, e.status) as RunState['status'];
      return {
        ...s,
        status,
        terminationReason: e.status === 'terminated' ? (e.reason ?? null) : null,
        error: e.error ?? null,
        finalMessageId: e.final_message_id !== undefined ? e.final_message_id : s.finalMessageId,
        finishedAt: new Date(e.at),
        state: { ...s.state, pending: s.state.pending.filter((p) => !openCall(p)), streaming_message_id: null, ...(s.state.pause ? { pause: null } : {}) },
      };
    }
  }
}
