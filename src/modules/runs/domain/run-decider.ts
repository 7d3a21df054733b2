import { DomainError } from '../../../common/errors/domain-error';
import type { ContentPart } from '../../agents/domain/model-provider';
import { canonicalJson } from '../../idempotency/domain/fingerprint';
import type { NewRunEvent } from '../../events/domain/run-event';
import type { PendingToolCall, RunProps, RunUsage, SteeredInput } from './run.aggregate';
import { canMove, isTerminal, RunError, RunErrorCode, RunStatus, TerminationReason } from './run-status';

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
}

export interface DecideEnv {
  now: number;
  newId(prefix: 'msg' | 'apr' | 'call'): string;
  tool(name: string): ToolFacts | null;
  /** Whether approvals can be opened here (the approvals module is present). */
  approvalsAvailable?: boolean;
  approvalTtlMs?: number;
}

export type ToolResult = { ok: true; result: unknown } | { ok: false; error: { code: string; message: string; retryable?: boolean } };

/** A server tool is tried at most this often when its failures are retryable. */
export const MAX_TOOL_ATTEMPTS = 3;
/** The same call with the same result this many times in a row ends the run (`loop_detected`). */
const LOOP_WINDOW = 3;

// ---- events -------------------------------------------------------------------------------

export type RunEvent =
  | { type: 'started'; at: number }
  | { type: 'input_received'; input: SteeredInput }
  | { type: 'input_taken'; message_id: string }
  | { type: 'turn_begun'; message_id: string }
  | { type: 'delta_streamed'; message_id: string; delta: string }
  | {
      type: 'turn_ended';
      message_id: string;
      content: ContentPart[];
      status: 'completed' | 'failed' | 'cancelled';
      usage: { input_tokens: number; output_tokens: number; cached_input_tokens: number };
      /** A crash-interrupted turn is redone: it is not counted as a step or a model call. */
      redo: boolean;
    }
  | { type: 'tools_requested'; calls: PendingToolCall[] }
  | { type: 'pending_cleared' }
  | { type: 'tool_started'; tool_call_id: string; attempt: number }
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
  | { type: 'waiting'; status: 'waiting_for_approval' | 'waiting_for_tool'; reason: 'approval_required' | 'client_tool' }
  | { type: 'resumed' }
  | { type: 'cancel_requested'; requested_by: string; at: number }
  | {
      type: 'finished';
      status: 'completed' | 'failed' | 'cancelled' | 'expired' | 'terminated';
      reason?: TerminationReason;
      error?: RunError | null;
      final_message_id?: string | null;
      at: number;
    };

// ---- observations and effects -------------------------------------------------------------

export interface ModelTurnOutcome {
  message_id: string;
  text: string;
  tool_calls: Array<{ id: string; name: string; arguments: unknown }>;
  usage: { input_tokens: number; output_tokens: number; cached_input_tokens: number };
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
  | { type: 'cancel_requested'; requested_by: string }
  | { type: 'input_steered'; inputs: SteeredInput[] }
  | { type: 'expired'; error: RunError | null }
  | { type: 'failed_unexpectedly' };

export type Effect =
  /** Commit (when there are changes) and decide again. */
  | { type: 'continue' }
  | { type: 'call_model'; message_id: string; call_index: number }
  /**
   * `commit_start_first`: `tool.started` is committed before the tool runs (a tool that is not
   * idempotent: a crash after the start makes its outcome unknown, it is never run again); an
   * idempotent one may start at once (a crash before the commit runs it again).
   */
  | { type: 'run_tool'; call: PendingToolCall; attempt: number; commit_start_first: boolean }
  /** The approval row opens in the same commit; then the run waits. */
  | { type: 'open_approval'; call: PendingToolCall; approval_id: string; expires_at: number }
  | { type: 'wait'; status: 'waiting_for_approval' | 'waiting_for_tool' }
  | { type: 'close_interrupted_turn'; message_id: string }
  /** The run is ready to be executed again (a worker picks it up). */
  | { type: 'resume' }
  | { type: 'finish' }
  /** Nothing to do (a repeated cancel, a steer already known). */
  | { type: 'none' };

export interface Decision {
  events: RunEvent[];
  effect: Effect;
}

// ---- decide -------------------------------------------------------------------------------

const openCall = (p: PendingToolCall) => p.status !== 'completed' && p.status !== 'failed';

export function deadlineOf(s: RunProps, now: number): number {
  return s.startedAt ? s.startedAt.getTime() + s.limits.timeout_ms : now + s.limits.timeout_ms;
}

function tokensUsed(u: RunUsage): number {
  return u.input_tokens + u.output_tokens;
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
function finishCall(s: RunProps, call: PendingToolCall, result: ToolResult, durationMs: number, env: DecideEnv, flags: { not_started?: boolean; silent?: boolean } = {}): Decision {
  const events: RunEvent[] = [{ type: 'tool_finished', tool_call_id: call.tool_call_id, result, duration_ms: durationMs, result_message_id: env.newId('msg'), ...flags }];
  const sig = loopSignature(call, result);
  const window = [...s.state.loop_window, sig].slice(-LOOP_WINDOW);
  if (window.length === LOOP_WINDOW && window.every((x) => x === sig)) {
    events.push(finished('terminated', env.now, { reason: 'loop_detected' }));
    return { events, effect: { type: 'finish' } };
  }
  return { events, effect: { type: 'continue' } };
}

function notFinished(s: RunProps): void {
  if (isTerminal(s.status)) throw new DomainError('run_finished', `the run is already ${s.status}`, { run_id: s.id, status: s.status }, s.id);
}

const UNKNOWN_AFTER_CRASH = { code: 'outcome_unknown', message: 'the tool was interrupted and may or may not have taken effect', retryable: false };
const UNKNOWN_AFTER_CANCEL = { code: 'outcome_unknown', message: 'interrupted by cancellation', retryable: false };

function decideNext(s: RunProps, env: DecideEnv, cancelSignalled: boolean): Decision {
  const now = env.now;
  if (isTerminal(s.status)) return { events: [], effect: { type: 'finish' } };
  if (s.status === 'waiting_for_approval' || s.status === 'waiting_for_tool') return { events: [], effect: { type: 'wait', status: s.status } };
  if (s.status === 'queued') return { events: [{ type: 'started', at: now }], effect: { type: 'continue' } };
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
  if (s.limits.max_total_tokens !== null && tokensUsed(s.usage) >= s.limits.max_total_tokens) {
    return { events: [finished('terminated', now, { reason: 'token_budget' })], effect: { type: 'finish' } };
  }
  // The next model turn takes the input steered to the run since the last one (CONTRACT section 7).
  const events: RunEvent[] = s.inbox.map((i) => ({ type: 'input_taken', message_id: i.message_id }));
  const messageId = env.newId('msg');
  events.push({ type: 'turn_begun', message_id: messageId });
  // The scripted model counts its turns from the newest user text: a steered one starts again.
  const callIndex = s.inbox.length > 0 ? 0 : s.usage.model_calls - s.state.input_call_base;
  return { events, effect: { type: 'call_model', message_id: messageId, call_index: callIndex } };
}

function decideTool(s: RunProps, p: PendingToolCall, env: DecideEnv): Decision {
  const facts = env.tool(p.tool_name);
  switch (p.status) {
    case 'awaiting_approval':
    case 'awaiting_client': {
      // Resumed without this call resolved: wait again.
      const status = p.status === 'awaiting_approval' ? 'waiting_for_approval' : 'waiting_for_tool';
      return { events: [{ type: 'waiting', status, reason: status === 'waiting_for_approval' ? 'approval_required' : 'client_tool' }], effect: { type: 'wait', status } };
    }
    case 'started':
      if (facts?.idempotent) return startTool(p, facts);
      // A crash interrupted a non-idempotent tool: its effect is unknown, never guessed.
      return finishCall(s, p, { ok: false, error: UNKNOWN_AFTER_CRASH }, 0, env);
    case 'approved':
      return startTool(p, facts);
    case 'requested':
      break;
    default:
      return { events: [], effect: { type: 'continue' } };
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
  if (facts && s.usage.tool_calls >= s.limits.max_tool_calls) return { events: [finished('terminated', env.now, { reason: 'tool_budget' })], effect: { type: 'finish' } };
  return startTool(p, facts);
}

/**
 * The call's next attempt. Its start is committed before it runs unless the tool is idempotent
 * (the registry's word, as for a take-over above: what a crash would do decides what must be
 * durable first).
 */
function startTool(p: PendingToolCall, facts: ToolFacts | null): Decision {
  const attempt = p.attempt + 1;
  return {
    events: [{ type: 'tool_started', tool_call_id: p.tool_call_id, attempt }],
    effect: { type: 'run_tool', call: { ...p, status: 'started', attempt }, attempt, commit_start_first: facts?.idempotent !== true },
  };
}

function decideModelTurn(s: RunProps, o: Extract<Observation, { type: 'model_turn_ended' }>, env: DecideEnv): Decision {
  const now = env.now;
  const deadline = deadlineOf(s, now);
  const content: ContentPart[] = [];
  if (o.text) content.push({ type: 'text', text: o.text });
  for (const c of o.tool_calls) content.push({ type: 'tool_call', tool_call_id: c.id, tool_name: c.name, arguments: c.arguments });
  const cancelled = (o.cancel_signalled ?? false) && (o.failure === null || o.aborted) && now < deadline;
  const hitDeadline = now >= deadline && (o.failure !== null || o.aborted);
  const status = o.failure || cancelled || hitDeadline ? (cancelled ? 'cancelled' : 'failed') : 'completed';
  const events: RunEvent[] = [{ type: 'turn_ended', message_id: o.message_id, content, status, usage: o.usage, redo: false }];
  const used = tokensUsed(s.usage) + o.usage.input_tokens + o.usage.output_tokens;
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

function decideToolFinished(s: RunProps, o: Extract<Observation, { type: 'tool_finished' }>, env: DecideEnv): Decision {
  const call = s.state.pending.find((p) => p.tool_call_id === o.tool_call_id);
  if (!call || call.status !== 'started') return { events: [], effect: { type: 'continue' } };
  const r = o.result;
  // Only idempotent tools are run again (CONTRACT section 13): a retry repeats the side-effect key.
  const facts = env.tool(call.tool_name);
  const retry = !r.ok && r.error.retryable === true && facts?.idempotent === true && call.attempt < MAX_TOOL_ATTEMPTS && !o.cancel_signalled && env.now < deadlineOf(s, env.now);
  if (retry) return startTool(call, facts);
  return finishCall(s, call, r, o.duration_ms, env);
}

function decideApproval(s: RunProps, o: Extract<Observation, { type: 'approval_decided' }>): Decision {
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

function decideClientOutputs(s: RunProps, o: Extract<Observation, { type: 'client_tool_outputs' }>, env: DecideEnv): Decision {
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

function decideCancel(s: RunProps, o: Extract<Observation, { type: 'cancel_requested' }>, now: number): Decision {
  if (s.status === 'cancelled' || s.status === 'cancelling') return { events: [], effect: { type: 'none' } };
  notFinished(s);
  const events: RunEvent[] = [{ type: 'cancel_requested', requested_by: o.requested_by, at: now }];
  // A running run stops its model call or tool first; queued and waiting runs execute nothing.
  if (s.status === 'running') return { events, effect: { type: 'none' } };
  events.push(finished('cancelled', now));
  return { events, effect: { type: 'finish' } };
}

export function decide(s: RunProps, o: Observation, env: DecideEnv): Decision {
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
    case 'expired':
      return { events: [finished('expired', env.now, { error: o.error })], effect: { type: 'finish' } };
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

function moved(s: RunProps, to: RunStatus): RunStatus {
  if (!canMove(s.status, to)) {
    throw new DomainError('run_finished', `a ${s.status} run cannot become ${to}`, { run_id: s.id, status: s.status }, s.id);
  }
  return to;
}

function patchCall(s: RunProps, id: string, patch: Partial<PendingToolCall>): PendingToolCall[] {
  if (!s.state.pending.some((p) => p.tool_call_id === id)) throw new Error(`no pending tool call ${id}`);
  return s.state.pending.map((p) => (p.tool_call_id === id ? { ...p, ...patch } : p));
}

function withState(s: RunProps, state: Partial<RunProps['state']>, more: Partial<RunProps> = {}): RunProps {
  return { ...s, ...more, state: { ...s.state, ...state } };
}

/** Applies one event. The status machine of CONTRACT section 7 holds here: an illegal move throws. */
export function evolve(s: RunProps, e: RunEvent): RunProps {
  switch (e.type) {
    case 'started':
      return { ...s, status: moved(s, 'running'), startedAt: new Date(e.at) };
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
      return withState(s, { pending: patchCall(s, e.tool_call_id, { status: 'started', attempt: e.attempt }) }, { usage });
    }
    case 'tool_handed_to_client':
      return withState(s, { pending: patchCall(s, e.tool_call_id, { status: 'awaiting_client', attempt: 1 }) }, { usage: { ...s.usage, tool_calls: s.usage.tool_calls + 1 } });
    case 'tool_finished': {
      const call = s.state.pending.find((p) => p.tool_call_id === e.tool_call_id)!;
      const patch: Partial<PendingToolCall> = e.result.ok ? { status: 'completed', ok: true, result: e.result.result } : { status: 'failed', ok: false, error: e.result.error };
      const loop = [...s.state.loop_window, loopSignature(call, e.result)].slice(-LOOP_WINDOW);
      return withState(s, { pending: patchCall(s, e.tool_call_id, patch), loop_window: loop });
    }
    case 'approval_opened':
      return withState(s, { pending: patchCall(s, e.tool_call_id, { status: 'awaiting_approval', approval_id: e.approval_id }) });
    case 'approval_decided':
      return withState(s, {
        pending: patchCall(s, e.tool_call_id, e.decision === 'approve' ? { status: 'approved' } : { status: 'requested', rejection: { reason: e.reason, decided_by: e.decided_by } }),
      });
    case 'waiting':
      return { ...s, status: moved(s, e.status), leaseOwner: null, leaseExpiresAt: null };
    case 'resumed':
      return { ...s, status: moved(s, 'running') };
    case 'cancel_requested':
      return { ...s, cancelRequestedAt: new Date(e.at), status: s.status === 'running' ? moved(s, 'cancelling') : s.status };
    case 'finished': {
      const from = e.status === 'cancelled' && s.status === 'running' ? 'cancelling' : s.status;
      const status = moved({ ...s, status: from }, e.status) as RunProps['status'];
      return {
        ...s,
        status,
        terminationReason: e.status === 'terminated' ? (e.reason ?? null) : null,
        error: e.error ?? null,
        finalMessageId: e.final_message_id !== undefined ? e.final_message_id : s.finalMessageId,
        finishedAt: new Date(e.at),
        leaseOwner: null,
        leaseExpiresAt: null,
        state: { ...s.state, pending: s.state.pending.filter((p) => !openCall(p)), streaming_message_id: null },
      };
    }
  }
}

// ---- the public events of each change (CONTRACT section 8) ----------------------------------

/** The public events `e` records, given the state before (`s`) and after (`next`) it. */
export function publicEvents(s: RunProps, e: RunEvent, next: RunProps): NewRunEvent[] {
  switch (e.type) {
    case 'started':
      return [{ type: 'run.started', data: { status: 'running' } }];
    case 'input_taken':
      return [{ type: 'run.input', data: { message_id: e.message_id } }];
    case 'turn_begun':
      return [{ type: 'message.started', data: { message_id: e.message_id, role: 'assistant' } }];
    case 'delta_streamed':
      return [{ type: 'message.delta', data: { message_id: e.message_id, content_index: 0, delta: e.delta } }];
    case 'turn_ended':
      return [{ type: 'message.completed', data: { message_id: e.message_id, content: e.content } }];
    case 'tools_requested':
      return e.calls.map((p) => ({ type: 'tool.requested', data: { tool_call_id: p.tool_call_id, tool_name: p.tool_name, arguments: p.arguments, risk: p.risk ?? 'auto' } }));
    case 'tool_started': {
      const p = next.state.pending.find((x) => x.tool_call_id === e.tool_call_id)!;
      return [{ type: 'tool.started', data: { tool_call_id: p.tool_call_id, tool_name: p.tool_name, attempt: e.attempt } }];
    }
    case 'tool_handed_to_client': {
      const p = next.state.pending.find((x) => x.tool_call_id === e.tool_call_id)!;
      return [{ type: 'tool.started', data: { tool_call_id: p.tool_call_id, tool_name: p.tool_name, attempt: 1 } }];
    }
    case 'tool_finished': {
      if (e.silent) return [];
      const p = s.state.pending.find((x) => x.tool_call_id === e.tool_call_id)!;
      const out: NewRunEvent[] = e.not_started ? [{ type: 'tool.started', data: { tool_call_id: p.tool_call_id, tool_name: p.tool_name, attempt: 0 } }] : [];
      out.push(
        e.result.ok
          ? { type: 'tool.completed', data: { tool_call_id: p.tool_call_id, tool_name: p.tool_name, result: e.result.result, duration_ms: e.duration_ms } }
          : { type: 'tool.failed', data: { tool_call_id: p.tool_call_id, tool_name: p.tool_name, error: { retryable: false, ...e.result.error }, duration_ms: e.duration_ms } },
      );
      return out;
    }
    case 'approval_opened': {
      const p = s.state.pending.find((x) => x.tool_call_id === e.tool_call_id)!;
      return [
        {
          type: 'approval.requested',
          data: { approval_id: e.approval_id, tool_call_id: p.tool_call_id, tool_name: p.tool_name, arguments: p.arguments, risk: p.risk ?? 'approve', expires_at: new Date(e.expires_at).toISOString() },
        },
      ];
    }
    case 'approval_decided':
      return [
        {
          type: e.decision === 'approve' ? 'approval.accepted' : 'approval.rejected',
          data: { approval_id: e.approval_id, tool_call_id: e.tool_call_id, decided_by: e.decided_by, reason: e.reason },
        },
      ];
    case 'waiting':
      return [{ type: 'run.waiting', data: { status: e.status, reason: e.reason } }];
    case 'resumed':
      return [{ type: 'run.resumed', data: { status: 'running' } }];
    case 'cancel_requested':
      return [{ type: 'run.cancel_requested', data: { requested_by: e.requested_by } }];
    case 'finished':
      return [
        { type: 'usage', data: { ...next.usage } },
        {
          type: 'run.finished',
          data: { status: e.status, final_message_id: next.finalMessageId, termination_reason: next.terminationReason, error: next.error, usage: { ...next.usage } },
        },
      ];
    case 'input_received':
    case 'pending_cleared':
      return [];
  }
}
