import { DomainError } from '../../../common/errors/domain-error';
import { newTestRun } from '../../../../test/helpers/run-fixture';
import { DEFAULT_LIMITS, PendingToolCall, RunState, SteeredInput, SubagentAllowance } from './run-state';
import { admit, ConcurrencyMode, decide, DecideEnv, Effect, evolve, HandoffTarget, NextCallEstimate, Observation, QuotaStatus, RunEvent, ToolFacts, toolRetryDelayMs } from './run-decider';

/**
 * The loop's rules as tables: given(events).when(observation).then(events, effect). The state a
 * row starts from is a fresh queued run evolved by the `given` events; ids are numbered.
 */

const T0 = Date.parse('2026-01-01T00:00:00Z');
const TOOLS: Record<string, ToolFacts> = {
  get_time: { risk: 'auto', executor: 'server', idempotent: true },
  create_ticket: { risk: 'approve', executor: 'server', idempotent: false },
  slow_tool: { risk: 'auto', executor: 'server', idempotent: false },
  lookup_customer: { risk: 'auto', executor: 'client', idempotent: false },
  ask_user: { risk: 'auto', executor: 'server', idempotent: false, pause: 'input' },
  wait: { risk: 'auto', executor: 'server', idempotent: true, pause: 'timer' },
  wait_until: { risk: 'auto', executor: 'server', idempotent: true, pause: 'timer' },
  hook_tool: { risk: 'auto', executor: 'server', idempotent: true, callback_timeout_ms: 60_000 },
  create_subagent: { risk: 'auto', executor: 'server', idempotent: false, subagent: { op: 'create', agents: [{ id: 'researcher', version: '2' }], max_concurrent: 2 } },
  send_subagent_input: { risk: 'auto', executor: 'server', idempotent: false, subagent: { op: 'send', agents: null, max_concurrent: 2 } },
  wait_for_subagents: { risk: 'auto', executor: 'server', idempotent: true, subagent: { op: 'wait', agents: null, max_concurrent: 2 } },
  close_subagent: { risk: 'auto', executor: 'server', idempotent: true, subagent: { op: 'close', agents: null, max_concurrent: 2 } },
  transfer_to_billing_agent: { risk: 'auto', executor: 'server', idempotent: true, handoff: { id: 'billing_agent', version: '3', model: 'scripted-billing' } },
};
const HASH = 'a'.repeat(64);

function initial(limits: Partial<RunState['limits']> = {}): RunState {
  // The decider's state is the run without its version.
  const { version: _version, ...state } = newTestRun({ userMessageId: 'msg_in', limits, now: new Date(T0), queueTtlMs: 3_600_000 }).snapshot();
  return state;
}

function env(now = T0 + 1000, nextCall?: NextCallEstimate, quota?: QuotaStatus, ownerAccess?: boolean): DecideEnv {
  let n = 0;
  return {
    now,
    newId: (p) => `${p}_${++n}`,
    tool: (name) => TOOLS[name] ?? null,
    approvalsAvailable: true,
    approvalTtlMs: 60_000,
    inputTtlMs: 3_600_000,
    newSecret: () => ({ token: 'cbt_secret', hash: HASH }),
    ...(nextCall ? { nextCall } : {}),
    ...(quota ? { quota } : {}),
    ...(ownerAccess !== undefined ? { ownerAccess } : {}),
  };
}

const started: RunEvent = { type: 'started', at: T0 };
const turn = (id = 'msg_a'): RunEvent => ({ type: 'turn_begun', message_id: id });
const zero = { input_tokens: 0, output_tokens: 0, cached_input_tokens: 0 };
const ended = (id = 'msg_a', usage = zero): RunEvent => ({ type: 'turn_ended', message_id: id, content: [], status: 'completed', usage, redo: false });
const call = (name: string, id = 'call_1', args: unknown = {}): PendingToolCall => ({
  tool_call_id: id,
  tool_name: name,
  arguments: args,
  risk: TOOLS[name]?.risk ?? null,
  executor: TOOLS[name]?.executor ?? null,
  idempotent: TOOLS[name]?.idempotent ?? false,
  status: 'requested',
  attempt: 0,
});
const requested = (...calls: PendingToolCall[]): RunEvent => ({ type: 'tools_requested', calls });
const toolStarted = (id = 'call_1', attempt = 1): RunEvent => ({ type: 'tool_started', tool_call_id: id, attempt });
const input = (id: string): SteeredInput => ({ message_id: id, accepted_at: new Date(T0).toISOString(), model: 'scripted', limits: DEFAULT_LIMITS, metadata: {} });
/** 50 steered inputs in commit order (msg_l0 .. msg_l49). */
const FIFTY = Array.from({ length: 50 }, (_, i) => input(`msg_l${i}`));
/** A run whose turn asked for create_ticket (risk approve), waiting for approval apr_1. */
const awaitingApproval: RunEvent[] = [
  started,
  turn(),
  ended(),
  requested(call('create_ticket')),
  { type: 'approval_opened', tool_call_id: 'call_1', approval_id: 'apr_1', expires_at: T0 },
  { type: 'waiting', status: 'waiting_for_approval', reason: 'approval_required' },
];
const turnOutcome = (o: Partial<Extract<Observation, { type: 'model_turn_ended' }>> = {}): Observation => ({
  type: 'model_turn_ended',
  message_id: 'msg_a',
  text: 'hi',
  tool_calls: [],
  usage: { input_tokens: 3, output_tokens: 2, cached_input_tokens: 0 },
  failure: null,
  aborted: false,
  ...o,
});

/** Subagents `sess_<n>` (runs `run_<n>`, named `<n>`) started by create_subagent calls of one turn (completed). */
function children(names: string[]): RunEvent[] {
  return names.flatMap((n): RunEvent[] => [
    requested({ ...call('create_subagent', `call_${n}`, { instructions: n }), status: 'completed' }),
    { type: 'subagent_run_started', tool_call_id: `call_${n}`, subagent: { id: `sess_${n}`, name: n, agent: { id: 'a', version: '1' } }, run_id: `run_${n}`, created: true },
  ]);
}
/** A subagent run's end as reported: 100 input tokens each. */
const outcome = (n: string, status: 'completed' | 'failed', text: string | null) => ({
  subagent_id: `sess_${n}`,
  run_id: `run_${n}`,
  status,
  text,
  usage: { input_tokens: 100, output_tokens: 0, cached_input_tokens: 0, tool_calls: 1 },
});
/** An approval asked by the subagent run `run_c1` (or a run below it). */
const childApproval = (id: string) => ({ approval_id: id, run_id: 'run_c1', tool_call_id: 'call_9', tool_name: 'create_ticket', arguments: { order_id: 'o1' }, risk: 'approve', expires_at: T0 + 60_000 });
/** The subagent `c1` (run `run_c1`) started with `allowance` of its parent's budgets, still active. */
function heldChildren(allowance: SubagentAllowance): RunEvent[] {
  return [
    requested({ ...call('create_subagent', 'call_c1', { instructions: 'c1' }), status: 'completed' }),
    { type: 'subagent_run_started', tool_call_id: 'call_c1', subagent: { id: 'sess_c1', name: 'c1', agent: { id: 'a', version: '1' } }, run_id: 'run_c1', created: true, allowance },
  ];
}
/** A parent waiting (timeout 30 s from T0 + 1000) for the subagents `names`. */
function waitingFor(names: string[]): RunEvent[] {
  return [
    started,
    turn(),
    ended(),
    ...children(names),
    requested(call('wait_for_subagents', 'call_w', { timeout_ms: 30_000 })),
    { type: 'subagents_awaited', tool_call_id: 'call_w', subagent_ids: names.map((n) => `sess_${n}`), at: T0 + 1000, until: T0 + 1000 + 30_000 },
    { type: 'waiting', status: 'waiting_for_subagents', reason: 'subagents' },
  ];
}

function given(events: RunEvent[], start = initial()): RunState {
  return events.reduce(evolve, start);
}

interface Row {
  name: string;
  given: RunEvent[];
  limits?: Partial<RunState['limits']>;
  when: Observation;
  now?: number;
  /** The executor's estimate of the next model call (limits.max_cost). */
  next?: NextCallEstimate;
  /** The tenant's spend limit as the environment reports it. */
  quota?: QuotaStatus;
  /** The claim's access re-check of a queued run (false: the owner's key was revoked). */
  ownerAccess?: boolean;
  /** The agent in control when the session's previous run ended (a queued run whose agent can hand off). */
  lastAgent?: HandoffTarget | null;
  /** Expected events: a prefix-free list of types, or (for detail) the events themselves. */
  then: Array<RunEvent['type'] | Partial<RunEvent>>;
  effect: Partial<Effect>;
  /** Checks of the state after the events. */
  state?: (s: RunState) => void;
}

/** The next call's estimate of the cost rows, and a run that spent 0.0012 on its first turn (a tool turn, resolved). */
const NEXT_CALL: NextCallEstimate = { input_tokens: 1000, max_output_tokens: 4096, price: { input_per_mtok: '1', output_per_mtok: '2' } };
const spent: RunEvent[] = [
  started,
  turn(),
  ended('msg_a', { input_tokens: 200, output_tokens: 500, cached_input_tokens: 0, cost: '0.0012' } as typeof zero),
  requested({ ...call('get_time'), status: 'completed' }),
  { type: 'pending_cleared' },
];

/** The events of a pause as its rule decides them (at T0 + 1000 with `env()`). */
function pauseFor(kind: 'input' | 'timer' | 'timer_past_deadline' | 'quota'): RunEvent[] {
  const at = T0 + 1000;
  switch (kind) {
    case 'input':
      return [{ type: 'input_requested', tool_call_id: 'call_1', question: 'q', at, expires_at: at + 3_600_000 }, { type: 'waiting', status: 'waiting_for_input', reason: 'input_required' }];
    case 'timer':
      return [{ type: 'timer_set', tool_call_id: 'call_1', at, until: at + 30_000, requested_until: at + 30_000 }, { type: 'waiting', status: 'waiting_for_timer', reason: 'timer' }];
    case 'timer_past_deadline':
      return [{ type: 'timer_set', tool_call_id: 'call_1', at, until: T0 + 300_000, requested_until: T0 + 86_400_000 }, { type: 'waiting', status: 'waiting_for_timer', reason: 'timer' }];
    case 'quota':
      return [{ type: 'quota_reached', at, resets_at: T0 + 86_400_000, details: {} }, { type: 'waiting', status: 'waiting_for_quota', reason: 'quota' }];
  }
}
const finishedEvent = (status: 'cancelled' | 'completed'): RunEvent => ({ type: 'finished', status, at: T0 });
/** A run whose hook_tool answered 202: waiting for its callback (token hash HASH). */
function callbackWaiting(): RunEvent[] {
  return [
    started,
    turn(),
    ended(),
    requested(call('hook_tool')),
    { type: 'tool_started', tool_call_id: 'call_1', attempt: 1, callback_token_hash: HASH },
    { type: 'callback_awaited', tool_call_id: 'call_1', at: T0 + 1000, expires_at: T0 + 61_000 },
    { type: 'waiting', status: 'waiting_for_callback', reason: 'callback' },
  ];
}

const finishedWith = (status: string, more: Record<string, unknown> = {}) => ({ type: 'finished' as const, status, ...more }) as Partial<RunEvent>;

const TABLE: Row[] = [
  // ---- starting and model turns
  { name: 'a queued run starts', given: [], when: { type: 'tick' }, then: ['started'], effect: { type: 'continue' }, state: (s) => expect(s.status).toBe('running') },
  {
    name: 'a running run with nothing pending calls the model (a step)',
    given: [started],
    when: { type: 'tick' },
    then: ['turn_begun'],
    effect: { type: 'call_model', message_id: 'msg_1', call_index: 0 },
    state: (s) => expect([s.stepCount, s.state.streaming_message_id]).toEqual([1, 'msg_1']),
  },
  {
    name: 'a turn that answers completes the run with its message as the final one',
    given: [started, turn()],
    when: turnOutcome(),
    then: ['turn_ended', finishedWith('completed', { final_message_id: 'msg_a' })],
    effect: { type: 'finish' },
    state: (s) => expect(s.usage).toMatchObject({ model_calls: 1, input_tokens: 3, output_tokens: 2 }),
  },
  {
    name: 'a turn that asks for tools requests them',
    given: [started, turn()],
    when: turnOutcome({ tool_calls: [{ id: 'call_1', name: 'get_time', arguments: {} }] }),
    then: ['turn_ended', { type: 'tools_requested', calls: [call('get_time')] }],
    effect: { type: 'continue' },
  },
  {
    name: 'a failed model call fails the run with its code',
    given: [started, turn()],
    when: turnOutcome({ failure: { code: 'model_timeout', message: 'slow' } }),
    then: [{ type: 'turn_ended', status: 'failed' }, finishedWith('failed', { error: { code: 'model_timeout', message: 'slow' } })],
    effect: { type: 'finish' },
  },
  // ---- budgets and the deadline
  {
    name: 'max_steps: no model call beyond it',
    limits: { max_steps: 1 },
    given: [started, turn(), ended(), requested({ ...call('get_time'), status: 'completed' }), { type: 'pending_cleared' }],
    when: { type: 'tick' },
    then: [finishedWith('terminated', { reason: 'max_steps' })],
    effect: { type: 'finish' },
  },
  {
    name: 'token budget: used up before a turn',
    limits: { max_total_tokens: 5 },
    given: [started, turn(), ended('msg_a', { input_tokens: 3, output_tokens: 2, cached_input_tokens: 0 }), requested({ ...call('get_time'), status: 'completed' }), { type: 'pending_cleared' }],
    when: { type: 'tick' },
    then: [finishedWith('terminated', { reason: 'token_budget' })],
    effect: { type: 'finish' },
  },
  {
    name: 'token budget: a turn that goes over it is never completed and runs no tool',
    limits: { max_total_tokens: 4 },
    given: [started, turn()],
    when: turnOutcome({ tool_calls: [{ id: 'call_1', name: 'get_time', arguments: {} }] }),
    then: ['turn_ended', finishedWith('terminated', { reason: 'token_budget', final_message_id: null })],
    effect: { type: 'finish' },
  },
  // ---- the cost budget (limits.max_cost): 1000 input tokens at 1/M + 4096 output at 2/M = 0.009192
  {
    name: 'cost budget: a call whose estimate fits is made',
    limits: { max_cost: '0.01' },
    next: NEXT_CALL,
    given: [started],
    when: { type: 'tick' },
    then: ['turn_begun'],
    effect: { type: 'call_model' },
  },
  {
    name: 'cost budget: a call that would take the run exactly to max_cost is made',
    limits: { max_cost: '0.010392' },
    next: NEXT_CALL,
    given: spent,
    when: { type: 'tick' },
    then: ['turn_begun'],
    effect: { type: 'call_model' },
  },
  {
    name: 'cost budget: the call that would exceed it is not made, the run is terminated',
    limits: { max_cost: '0.01' },
    next: NEXT_CALL,
    given: spent,
    when: { type: 'tick' },
    then: [finishedWith('terminated', { reason: 'cost_budget' })],
    effect: { type: 'finish' },
    state: (s) => expect([s.status, s.terminationReason, s.usage.model_calls, s.usage.estimated_cost.amount]).toEqual(['terminated', 'cost_budget', 1, '0.0012']),
  },
  {
    name: 'cost budget: none set, the same call is made',
    next: NEXT_CALL,
    given: spent,
    when: { type: 'tick' },
    then: ['turn_begun'],
    effect: { type: 'call_model' },
  },
  {
    name: 'cost budget: a model without a price costs nothing, its call is made',
    limits: { max_cost: '0.0012' },
    next: { input_tokens: 1000, max_output_tokens: 4096 },
    given: spent,
    when: { type: 'tick' },
    then: ['turn_begun'],
    effect: { type: 'call_model' },
  },
  {
    name: 'cost budget: without an estimate, a run that already spent past it is terminated',
    limits: { max_cost: '0.001' },
    given: spent,
    when: { type: 'tick' },
    then: [finishedWith('terminated', { reason: 'cost_budget' })],
    effect: { type: 'finish' },
  },
  {
    name: 'tool budget: no tool call beyond max_tool_calls',
    limits: { max_tool_calls: 1 },
    given: [started, turn(), ended(), requested(call('get_time', 'call_1'), call('get_time', 'call_2')), toolStarted('call_1')],
    when: { type: 'tool_finished', tool_call_id: 'call_1', result: { ok: true, result: 1 }, duration_ms: 3 },
    then: ['tool_finished'],
    effect: { type: 'continue' },
  },
  {
    name: 'tool budget: the next call terminates the run',
    limits: { max_tool_calls: 1 },
    given: [
      started,
      turn(),
      ended(),
      requested(call('get_time', 'call_1'), call('get_time', 'call_2')),
      toolStarted('call_1'),
      { type: 'tool_finished', tool_call_id: 'call_1', result: { ok: true, result: 1 }, duration_ms: 3, result_message_id: 'msg_r' },
    ],
    when: { type: 'tick' },
    then: [finishedWith('terminated', { reason: 'tool_budget' })],
    effect: { type: 'finish' },
  },
  {
    name: 'deadline: passed before the next step',
    given: [started],
    now: T0 + DEFAULT_LIMITS.timeout_ms,
    when: { type: 'tick' },
    then: [finishedWith('terminated', { reason: 'deadline' })],
    effect: { type: 'finish' },
  },
  {
    name: 'deadline: a model call aborted by it terminates the run, its message failed',
    given: [started, turn()],
    now: T0 + DEFAULT_LIMITS.timeout_ms + 1,
    when: turnOutcome({ aborted: true, failure: { code: 'model_timeout', message: 'the run deadline passed during the model call' } }),
    then: [{ type: 'turn_ended', status: 'failed' }, finishedWith('terminated', { reason: 'deadline' })],
    effect: { type: 'finish' },
  },
  {
    name: 'loop detection: the same call with the same result a third time in a row',
    given: [
      started,
      turn(),
      ended(),
      requested(call('get_time', 'c1'), call('get_time', 'c2'), call('get_time', 'c3')),
      toolStarted('c1'),
      { type: 'tool_finished', tool_call_id: 'c1', result: { ok: true, result: 1 }, duration_ms: 1, result_message_id: 'm1' },
      toolStarted('c2'),
      { type: 'tool_finished', tool_call_id: 'c2', result: { ok: true, result: 1 }, duration_ms: 1, result_message_id: 'm2' },
      toolStarted('c3'),
    ],
    when: { type: 'tool_finished', tool_call_id: 'c3', result: { ok: true, result: 1 }, duration_ms: 1 },
    then: ['tool_finished', finishedWith('terminated', { reason: 'loop_detected' })],
    effect: { type: 'finish' },
  },
  // ---- tools
  {
    name: 'an idempotent tool starts at once (attempt 1): its start may commit with its outcome',
    given: [started, turn(), ended(), requested(call('get_time'))],
    when: { type: 'tick' },
    then: [toolStarted()],
    effect: { type: 'run_tool', attempt: 1, commit_start_first: false },
  },
  {
    name: 'a non-idempotent tool runs only once its start is committed',
    given: [started, turn(), ended(), requested(call('slow_tool'))],
    when: { type: 'tick' },
    then: [toolStarted()],
    effect: { type: 'run_tool', attempt: 1, commit_start_first: true },
  },
  {
    name: 'an approved non-idempotent tool: its start is committed first too',
    given: [
      ...awaitingApproval,
      { type: 'approval_decided', approval_id: 'apr_1', tool_call_id: 'call_1', decision: 'approve', decided_by: 'u', reason: null },
      { type: 'resumed' },
    ],
    when: { type: 'tick' },
    then: [toolStarted()],
    effect: { type: 'run_tool', attempt: 1, commit_start_first: true },
  },
  {
    name: 'a retryable failure is tried again, up to 3 attempts',
    given: [started, turn(), ended(), requested(call('get_time')), toolStarted('call_1', 2)],
    when: { type: 'tool_finished', tool_call_id: 'call_1', result: { ok: false, error: { code: 'tool_failed', message: 'flaky', retryable: true } }, duration_ms: 1 },
    then: [toolStarted('call_1', 3)],
    effect: { type: 'run_tool', attempt: 3, commit_start_first: false },
  },
  {
    name: 'a non-idempotent tool is not run again after a retryable failure: the failure is its outcome (CONTRACT section 13)',
    given: [started, turn(), ended(), requested(call('slow_tool')), toolStarted('call_1', 1)],
    when: { type: 'tool_finished', tool_call_id: 'call_1', result: { ok: false, error: { code: 'tool_failed', message: 'flaky', retryable: true } }, duration_ms: 1 },
    then: ['tool_finished'],
    effect: { type: 'continue' },
  },
  {
    name: 'a retry waits first: the backoff of attempt 2 is 250..500 ms (jittered), of attempt 3 500..1000 ms',
    given: [started, turn(), ended(), requested(call('get_time')), toolStarted('call_1', 1)],
    when: { type: 'tool_finished', tool_call_id: 'call_1', result: { ok: false, error: { code: 'tool_failed', message: 'flaky', retryable: true } }, duration_ms: 1 },
    then: [toolStarted('call_1', 2)],
    effect: { type: 'run_tool', attempt: 2, delay_ms: toolRetryDelayMs('call_1', 1) },
  },
  {
    name: 'no retry whose wait would end after the run deadline: the failure is the outcome',
    given: [started, turn(), ended(), requested(call('get_time')), toolStarted('call_1', 1)],
    now: T0 + DEFAULT_LIMITS.timeout_ms - toolRetryDelayMs('call_1', 1),
    when: { type: 'tool_finished', tool_call_id: 'call_1', result: { ok: false, error: { code: 'tool_failed', message: 'flaky', retryable: true } }, duration_ms: 1 },
    then: ['tool_finished'],
    effect: { type: 'continue' },
  },
  {
    name: 'the third retryable failure is the outcome',
    given: [started, turn(), ended(), requested(call('get_time')), toolStarted('call_1', 3)],
    when: { type: 'tool_finished', tool_call_id: 'call_1', result: { ok: false, error: { code: 'tool_failed', message: 'flaky', retryable: true } }, duration_ms: 1 },
    then: ['tool_finished'],
    effect: { type: 'continue' },
  },
  {
    name: 'a client tool hands the call over and waits',
    given: [started, turn(), ended(), requested(call('lookup_customer'))],
    when: { type: 'tick' },
    then: ['tool_handed_to_client', { type: 'waiting', status: 'waiting_for_tool' }],
    effect: { type: 'wait', status: 'waiting_for_tool' },
    state: (s) => expect(s.usage.tool_calls).toBe(1),
  },
  {
    name: 'an unknown tool still runs (its outcome is data for the model)',
    given: [started, turn(), ended(), requested(call('nope'))],
    when: { type: 'tick' },
    then: [toolStarted()],
    effect: { type: 'run_tool', commit_start_first: true },
  },
  // ---- approvals
  {
    name: 'an approve-risk call opens an approval and waits',
    given: [started, turn(), ended(), requested(call('create_ticket'))],
    when: { type: 'tick' },
    then: [{ type: 'approval_opened', approval_id: 'apr_1', expires_at: T0 + 1000 + 60_000 }, { type: 'waiting', status: 'waiting_for_approval' }],
    effect: { type: 'open_approval', approval_id: 'apr_1' },
  },
  {
    name: 'approve: the run resumes and runs the tool',
    given: awaitingApproval,
    when: { type: 'approval_decided', approval_id: 'apr_1', tool_call_id: 'call_1', decision: 'approve', decided_by: 'u', reason: null },
    then: [{ type: 'approval_decided', decision: 'approve' }, 'resumed'],
    effect: { type: 'resume' },
    state: (s) => expect([s.status, s.state.pending[0].status, s.stepCount]).toEqual(['running', 'approved', 1]),
  },
  {
    name: 'a rejected approval: the tool never runs; the model gets the rejection as its result',
    given: [
      ...awaitingApproval,
      { type: 'approval_decided', approval_id: 'apr_1', tool_call_id: 'call_1', decision: 'reject', decided_by: 'u', reason: 'no' },
      { type: 'resumed' },
    ],
    when: { type: 'tick' },
    then: [{ type: 'tool_finished', silent: true, result: { ok: false, error: { code: 'tool_failed', message: 'rejected by u: no', retryable: false } } }],
    effect: { type: 'continue' },
  },
  {
    name: 'a waiting run resumed with its approval still open waits again',
    given: [started, turn(), ended(), requested(call('create_ticket')), { type: 'approval_opened', tool_call_id: 'call_1', approval_id: 'apr_1', expires_at: T0 }],
    when: { type: 'tick' },
    then: [{ type: 'waiting', status: 'waiting_for_approval' }],
    effect: { type: 'wait' },
  },
  // ---- cancel in each status
  { name: 'cancel a queued run: cancelled at once', given: [], when: { type: 'cancel_requested', requested_by: 'u' }, then: ['cancel_requested', finishedWith('cancelled')], effect: { type: 'finish' } },
  {
    name: 'cancel a running run: cancelling, the step in flight finishes first',
    given: [started, turn()],
    when: { type: 'cancel_requested', requested_by: 'u' },
    then: ['cancel_requested'],
    effect: { type: 'none' },
    state: (s) => expect(s.status).toBe('cancelling'),
  },
  {
    name: 'cancel a run waiting for approval: cancelled at once',
    given: awaitingApproval,
    when: { type: 'cancel_requested', requested_by: 'u' },
    then: ['cancel_requested', finishedWith('cancelled')],
    effect: { type: 'finish' },
  },
  {
    name: 'cancel a run waiting for a client tool: cancelled at once',
    given: [started, turn(), ended(), requested(call('lookup_customer')), { type: 'tool_handed_to_client', tool_call_id: 'call_1' }, { type: 'waiting', status: 'waiting_for_tool', reason: 'client_tool' }],
    when: { type: 'cancel_requested', requested_by: 'u' },
    then: ['cancel_requested', finishedWith('cancelled')],
    effect: { type: 'finish' },
  },
  { name: 'cancel a cancelling run: nothing more', given: [started, { type: 'cancel_requested', requested_by: 'u', at: T0 }], when: { type: 'cancel_requested', requested_by: 'v' }, then: [], effect: { type: 'none' } },
  {
    name: 'a cancelling run finishes cancelled once its step is over',
    given: [started, { type: 'cancel_requested', requested_by: 'u', at: T0 }],
    when: { type: 'tick' },
    then: [finishedWith('cancelled')],
    effect: { type: 'finish' },
  },
  {
    name: 'a cancel that interrupted the model call: the message is cancelled, then the run',
    given: [started, turn(), { type: 'cancel_requested', requested_by: 'u', at: T0 }],
    when: turnOutcome({ aborted: true, cancel_signalled: true }),
    then: [{ type: 'turn_ended', status: 'cancelled' }, finishedWith('cancelled')],
    effect: { type: 'finish' },
  },
  {
    name: 'cancelling after a crash mid-tool: the started tool is outcome_unknown, then cancelled',
    given: [started, turn(), ended(), requested(call('slow_tool')), toolStarted(), { type: 'cancel_requested', requested_by: 'u', at: T0 }],
    when: { type: 'lease_resumed' },
    then: [{ type: 'tool_finished', result: { ok: false, error: { code: 'outcome_unknown', message: 'interrupted by cancellation', retryable: false } } }, finishedWith('cancelled')],
    effect: { type: 'finish' },
  },
  // ---- crashes (a take-over resumes from the saved state)
  {
    name: 'a crash with a streaming message open: the message is read, then closed failed and the turn redone',
    given: [started, turn('msg_s')],
    when: { type: 'lease_resumed' },
    then: [],
    effect: { type: 'close_interrupted_turn', message_id: 'msg_s' },
  },
  {
    name: '... and its content closes it, the step not counted twice',
    given: [started, turn('msg_s')],
    when: { type: 'interrupted_turn_read', message_id: 'msg_s', content: [{ type: 'text', text: 'par' }] },
    then: [{ type: 'turn_ended', status: 'failed', redo: true, content: [{ type: 'text', text: 'par' }] }],
    effect: { type: 'continue' },
    state: (s) => expect([s.stepCount, s.usage.model_calls, s.state.streaming_message_id]).toEqual([0, 0, null]),
  },
  {
    name: 'an interrupted non-idempotent tool: outcome_unknown, shown to the model, never re-run',
    given: [started, turn(), ended(), requested(call('slow_tool')), toolStarted()],
    when: { type: 'lease_resumed' },
    then: [{ type: 'tool_finished', result: { ok: false, error: { code: 'outcome_unknown', message: 'the tool was interrupted and may or may not have taken effect', retryable: false } } }],
    effect: { type: 'continue' },
  },
  {
    name: 'an interrupted idempotent tool is run again with its next attempt',
    given: [started, turn(), ended(), requested(call('get_time')), toolStarted()],
    when: { type: 'lease_resumed' },
    then: [toolStarted('call_1', 2)],
    effect: { type: 'run_tool', attempt: 2, commit_start_first: false },
  },
  // ---- steering
  {
    name: 'a steered input is taken into the next model turn (run.input), its script starting over',
    given: [started, turn(), ended(), requested({ ...call('get_time'), status: 'completed' }), { type: 'pending_cleared' }, { type: 'input_received', input: input('msg_st') }],
    when: { type: 'tick' },
    then: [{ type: 'input_taken', message_id: 'msg_st' }, 'turn_begun'],
    effect: { type: 'call_model', call_index: 0 },
    state: (s) => expect([s.inbox, s.state.inputs, s.state.input_call_base]).toEqual([[], [{ message_id: 'msg_st', before: 'msg_1' }], 1]),
  },
  {
    name: 'a steered input never interrupts a tool: the started call finishes first',
    given: [started, turn(), ended(), requested(call('slow_tool')), toolStarted(), { type: 'input_received', input: input('msg_st') }],
    when: { type: 'tool_finished', tool_call_id: 'call_1', result: { ok: true, result: 'ok' }, duration_ms: 9 },
    then: ['tool_finished'],
    effect: { type: 'continue' },
    state: (s) => expect(s.inbox.map((i) => i.message_id)).toEqual(['msg_st']),
  },
  {
    name: 'input steered while the model answered: the run goes on to take it',
    given: [started, turn(), { type: 'input_received', input: input('msg_st') }],
    when: turnOutcome(),
    then: ['turn_ended'],
    effect: { type: 'continue' },
    state: (s) => expect(s.status).toBe('running'),
  },
  {
    name: '... unless it has no step left: it completes and leaves the input to a new run',
    limits: { max_steps: 1 },
    given: [started, turn(), { type: 'input_received', input: input('msg_st') }],
    when: turnOutcome(),
    then: ['turn_ended', finishedWith('completed')],
    effect: { type: 'finish' },
    state: (s) => expect(s.inbox.map((i) => i.message_id)).toEqual(['msg_st']),
  },
  {
    name: 'a waiting run keeps a steered input for the turn after it resumes',
    given: awaitingApproval,
    when: { type: 'input_steered', inputs: [input('msg_st')] },
    then: [{ type: 'input_received' }],
    effect: { type: 'none' },
    state: (s) => expect([s.status, s.inbox.length]).toEqual(['waiting_for_approval', 1]),
  },
  {
    name: 'an input already known is not received twice',
    given: [started, { type: 'input_received', input: input('msg_st') }],
    when: { type: 'input_steered', inputs: [input('msg_st')] },
    then: [],
    effect: { type: 'none' },
  },
  {
    name: 'a redone turn keeps the inputs it took for the turn that redoes it',
    given: [started, { type: 'input_received', input: input('msg_st') }, { type: 'input_taken', message_id: 'msg_st' }, turn('msg_s')],
    when: { type: 'interrupted_turn_read', message_id: 'msg_s', content: [] },
    then: ['turn_ended'],
    effect: { type: 'continue' },
    state: (s) => expect(evolve(s, turn('msg_t')).state.inputs).toEqual([{ message_id: 'msg_st', before: 'msg_t' }]),
  },

  // ---- handoffs (CONTRACT 16)
  {
    name: 'transfer_to_<agent> completes at once and hands the run to the pinned target (its model; the turn that asked was the step)',
    given: [started, turn(), ended(), requested(call('transfer_to_billing_agent', 'call_1', { reason: 'a refund' }))],
    when: { type: 'tick' },
    then: [
      { type: 'tool_started', tool_call_id: 'call_1', attempt: 1 },
      { type: 'tool_finished', tool_call_id: 'call_1', result: { ok: true, result: { handed_off_to: { id: 'billing_agent', version: '3' } } } },
      { type: 'handed_off', tool_call_id: 'call_1', from: { id: 'a', version: '1' }, to: { id: 'billing_agent', version: '3' }, model: 'scripted-billing', reason: 'a refund' },
    ],
    effect: { type: 'continue' },
    state: (s) => {
      expect([s.status, s.stepCount, s.model, s.state.current_agent, s.agent]).toEqual(['running', 1, 'scripted-billing', { id: 'billing_agent', version: '3' }, { id: 'a', version: '1' }]);
      // The next step is the target's model turn (after the turn's calls are cleared).
      const next = decide(evolve(s, { type: 'pending_cleared' }), { type: 'tick' }, env());
      expect(next.effect).toMatchObject({ type: 'call_model' });
    },
  },
  {
    name: 'a handoff does not run the other calls of its turn: each fails handed_off for the model to read',
    given: [started, turn(), ended(), requested(call('transfer_to_billing_agent', 'call_1'), call('get_time', 'call_2'))],
    when: { type: 'tick' },
    then: [
      'tool_started',
      { type: 'tool_finished', tool_call_id: 'call_1' },
      { type: 'tool_finished', tool_call_id: 'call_2', not_started: true, result: { ok: false, error: expect.objectContaining({ code: 'handed_off' }) } as never },
      { type: 'handed_off', reason: null },
    ],
    effect: { type: 'continue' },
  },
  {
    name: 'a transfer_to_ name the agent in control does not list is a tool error shown to the model; the run goes on',
    given: [started, turn(), ended(), requested(call('transfer_to_nobody', 'call_1'))],
    when: { type: 'tick' },
    then: [{ type: 'tool_finished', not_started: true, result: { ok: false, error: expect.objectContaining({ code: 'handoff_not_allowed' }) } as never }],
    effect: { type: 'continue' },
    state: (s) => expect([s.status, s.state.current_agent]).toEqual(['running', undefined]),
  },
  {
    name: 'max_steps is per run, not per agent: after a handoff the target gets only the steps left',
    limits: { max_steps: 1 },
    given: [
      started,
      turn(),
      ended(),
      requested({ ...call('transfer_to_billing_agent'), status: 'completed' }),
      { type: 'handed_off', tool_call_id: 'call_1', from: { id: 'support_agent', version: '1' }, to: { id: 'billing_agent', version: '3' }, model: 'm', reason: null },
      { type: 'pending_cleared' },
    ],
    when: { type: 'tick' },
    then: [finishedWith('terminated', { reason: 'max_steps' })],
    effect: { type: 'finish' },
  },
  {
    name: "a run starts with the agent that had control of its session last (its pinned model)",
    given: [],
    lastAgent: { id: 'billing_agent', version: '3', model: 'scripted-billing' },
    when: { type: 'tick' },
    then: [{ type: 'started', agent: { id: 'billing_agent', version: '3', model: 'scripted-billing' } }],
    effect: { type: 'continue' },
    state: (s) => expect([s.status, s.state.current_agent, s.model]).toEqual(['running', { id: 'billing_agent', version: '3' }, 'scripted-billing']),
  },
  {
    name: "a run whose session's last agent is its own starts as it is",
    given: [],
    lastAgent: { id: 'a', version: '1', model: 'scripted' },
    when: { type: 'tick' },
    then: [{ type: 'started' }],
    effect: { type: 'continue' },
    state: (s) => expect(s.state.current_agent).toBeUndefined(),
  },

  // ---- subagents (CONTRACT 16)
  {
    name: 'create_subagent starts a child run (its start committed first); the call is started',
    given: [started, turn(), ended(), requested(call('create_subagent', 'call_1', { agent_id: 'researcher', name: 'r1', instructions: 'look it up' }))],
    when: { type: 'tick' },
    then: [{ type: 'tool_started', tool_call_id: 'call_1', attempt: 1 }],
    effect: { type: 'start_subagent_run', subagent: { id: null, name: 'r1', agent: { id: 'researcher', version: '2' } }, input: 'look it up' },
  },
  {
    name: 'the child run started: the call returns {subagent_id, run_id} at once (subagent.created), the parent goes on',
    given: [started, turn(), ended(), requested(call('create_subagent', 'call_1', { instructions: 'x' })), toolStarted()],
    when: { type: 'subagent_run_started', tool_call_id: 'call_1', subagent: { id: 'sess_c1', name: 'subagent_1', agent: { id: 'a', version: '1' } }, run_id: 'run_c1', created: true },
    then: ['subagent_run_started', { type: 'tool_finished', result: { ok: true, result: { subagent_id: 'sess_c1', run_id: 'run_c1' } } }],
    effect: { type: 'continue' },
    state: (s) => expect(s.state.subagents).toEqual([{ id: 'sess_c1', name: 'subagent_1', agent: { id: 'a', version: '1' }, run_id: 'run_c1', status: 'queued', text: null, closed: false }]),
  },
  {
    name: 'create_subagent of an agent not listed in subagents.agents is a tool error',
    given: [started, turn(), ended(), requested(call('create_subagent', 'call_1', { agent_id: 'other', instructions: 'x' }))],
    when: { type: 'tick' },
    then: [{ type: 'tool_finished', not_started: true, result: { ok: false, error: expect.objectContaining({ code: 'subagent_not_allowed' }) } as never }],
    effect: { type: 'continue' },
  },
  {
    name: "a fan-out of two in one turn: the first gets a third of what is left of each of the parent's budgets (the parent keeps a third), one level of depth less, at most the parent's time left",
    limits: { max_tool_calls: 10, max_cost: '0.03', max_total_tokens: 1000, max_subagents_per_run: 7, timeout_ms: 60_000 },
    given: [
      started,
      turn(),
      ended('msg_a', { input_tokens: 100, output_tokens: 0, cached_input_tokens: 0 }),
      requested(call('create_subagent', 'call_1', { instructions: 'x' }), call('create_subagent', 'call_2', { instructions: 'y' })),
    ],
    when: { type: 'tick' },
    then: ['tool_started'],
    effect: {
      type: 'start_subagent_run',
      // (10 - 1 for this call) / 3; (7 - 1) / 3; (1000 - 100) / 3; 0.03 / 3; 3 - 1; the parent's deadline is 59 s away.
      limits: { max_tool_calls: 3, max_subagents_per_run: 2, max_total_tokens: 300, max_cost: '0.01', max_subagent_depth: 2, timeout_ms: 59_000 },
      allowance: { tool_calls: 3, subagent_runs: 2, total_tokens: 300, cost: '0.01' },
    },
  },
  {
    name: 'a chain (one create a turn): the subagent gets half of what is left after what the active ones hold',
    limits: { max_tool_calls: 10, max_cost: '0.03' },
    given: [started, turn(), ended(), ...heldChildren({ tool_calls: 3, total_tokens: null, cost: '0.01', subagent_runs: 6 }), requested(call('create_subagent', 'call_2', { instructions: 'x' }))],
    when: { type: 'tick' },
    then: ['tool_started'],
    // (10 - 1 - 3) / 2 = 3; (0.03 - 0.01) / 2; (20 - 2 - 6) / 2 = 6: the parent keeps the other half.
    effect: { type: 'start_subagent_run', allowance: { tool_calls: 3, cost: '0.01', subagent_runs: 6, total_tokens: null } },
  },
  {
    name: 'what an active subagent holds counts as used: a parent tool call past max_tool_calls with it held ends the parent (tool_budget), which ends the child',
    limits: { max_tool_calls: 2 },
    given: [started, turn(), ended(), ...heldChildren({ tool_calls: 2, total_tokens: null, cost: null, subagent_runs: 0 }), requested(call('get_time', 'call_t'))],
    when: { type: 'tick' },
    then: [{ type: 'finished', status: 'terminated', reason: 'tool_budget' }, { type: 'subagents_cancel_requested', run_ids: ['run_c1'], reason: 'parent_ended' }],
    effect: { type: 'finish' },
  },
  {
    name: 'an ended subagent holds nothing: its real usage counts instead, and the parent may go on',
    limits: { max_tool_calls: 2 },
    given: [
      started,
      turn(),
      ended(),
      ...heldChildren({ tool_calls: 2, total_tokens: null, cost: null, subagent_runs: 0 }),
      { type: 'subagent_ended', outcome: outcome('c1', 'completed', 'one') },
      requested(call('get_time', 'call_t')),
    ],
    when: { type: 'tick' },
    then: [{ type: 'tool_started', tool_call_id: 'call_t' }],
    effect: { type: 'run_tool' },
  },
  {
    name: "cost held by an active subagent counts in the parent's pre-call check (cost_budget)",
    limits: { max_cost: '0.01' },
    given: [started, turn(), ended(), ...heldChildren({ tool_calls: 0, total_tokens: null, cost: '0.005', subagent_runs: 0 }), { type: 'pending_cleared' }],
    when: { type: 'tick' },
    // 0.005 held + this call's 0.006 estimate > 0.01 (without the child's 0.005 it would fit).
    next: { input_tokens: 1000, max_output_tokens: 5000, price: { input_per_mtok: '1', output_per_mtok: '1' } },
    then: [{ type: 'finished', status: 'terminated', reason: 'cost_budget' }, { type: 'subagents_cancel_requested', run_ids: ['run_c1'], reason: 'parent_ended' }],
    effect: { type: 'finish' },
  },
  {
    name: 'max_subagent_depth 0: create_subagent is the tool error subagent_limit (the run goes on)',
    limits: { max_subagent_depth: 0 },
    given: [started, turn(), ended(), requested(call('create_subagent', 'call_1', { instructions: 'x' }))],
    when: { type: 'tick' },
    then: [{ type: 'tool_finished', not_started: true, result: { ok: false, error: expect.objectContaining({ code: 'subagent_limit', message: expect.stringContaining('max_subagent_depth') }) } as never }],
    effect: { type: 'continue' },
  },
  {
    name: "max_subagents_per_run counts the tree's runs (its own and those its ended subagents reported): one more is subagent_limit",
    limits: { max_subagents_per_run: 3 },
    given: [
      started,
      turn(),
      ended(),
      ...children(['c1']),
      // c1's own tree started 2 runs: 1 + 2 = 3.
      { type: 'subagent_ended', outcome: { ...outcome('c1', 'completed', 'one'), usage: { ...outcome('c1', 'completed', 'one').usage, subagent_runs: 2 } } },
      requested(call('send_subagent_input', 'call_s', { subagent_id: 'c1', input: 'more' })),
    ],
    when: { type: 'tick' },
    then: [{ type: 'tool_finished', not_started: true, result: { ok: false, error: expect.objectContaining({ code: 'subagent_limit', message: expect.stringContaining('max_subagents_per_run') }) } as never }],
    effect: { type: 'continue' },
    state: (s) => expect(s.state.subagent_runs).toBe(3),
  },
  {
    name: 'max_concurrent: a third active subagent run is refused and the tool result says so',
    given: [started, turn(), ended(), ...children(['c1', 'c2']), requested(call('create_subagent', 'call_9', { instructions: 'x' }))],
    when: { type: 'tick' },
    then: [{ type: 'tool_finished', not_started: true, result: { ok: false, error: expect.objectContaining({ code: 'max_concurrent_subagents', message: expect.stringContaining('at most 2') }) } as never }],
    effect: { type: 'continue' },
  },
  {
    name: "send_subagent_input to a subagent whose run ended (by its name) starts its next run in the same child session",
    given: [started, turn(), ended(), ...children(['c1']), { type: 'subagent_ended', outcome: outcome('c1', 'completed', 'one') }, requested(call('send_subagent_input', 'call_s', { subagent_id: 'c1', input: 'more' }))],
    when: { type: 'tick' },
    then: ['tool_started'],
    effect: { type: 'start_subagent_run', subagent: { id: 'sess_c1', name: 'c1', agent: { id: 'a', version: '1' } }, input: 'more' },
  },
  {
    name: 'send_subagent_input to a subagent still running is a tool error (subagent_busy)',
    given: [started, turn(), ended(), ...children(['c1']), requested(call('send_subagent_input', 'call_s', { subagent_id: 'sess_c1', input: 'more' }))],
    when: { type: 'tick' },
    then: [{ type: 'tool_finished', not_started: true, result: { ok: false, error: expect.objectContaining({ code: 'subagent_busy' }) } as never }],
    effect: { type: 'continue' },
  },
  {
    name: "send's run started: the subagent's latest run is the new one (no second subagent.created)",
    given: [started, turn(), ended(), ...children(['c1']), { type: 'subagent_ended', outcome: outcome('c1', 'completed', 'one') }, requested(call('send_subagent_input', 'call_s', { subagent_id: 'c1', input: 'more' })), toolStarted('call_s')],
    when: { type: 'subagent_run_started', tool_call_id: 'call_s', subagent: { id: 'sess_c1', name: 'c1', agent: { id: 'a', version: '1' } }, run_id: 'run_c1b', created: false },
    then: [{ type: 'subagent_run_started', created: false }, { type: 'tool_finished', result: { ok: true, result: { subagent_id: 'sess_c1', run_id: 'run_c1b' } } }],
    effect: { type: 'continue' },
    state: (s) => expect(s.state.subagents).toEqual([expect.objectContaining({ id: 'sess_c1', run_id: 'run_c1b', status: 'queued', text: null })]),
  },
  {
    name: 'wait_for_subagents with children running: the run waits (waiting_for_subagents) until timeout_ms',
    given: [started, turn(), ended(), ...children(['c1', 'c2']), requested(call('wait_for_subagents', 'call_w', { timeout_ms: 30_000 }))],
    when: { type: 'tick' },
    then: [{ type: 'subagents_awaited', tool_call_id: 'call_w', subagent_ids: ['sess_c1', 'sess_c2'], until: T0 + 1000 + 30_000 }, { type: 'waiting', status: 'waiting_for_subagents', reason: 'subagents' }],
    effect: { type: 'wait', status: 'waiting_for_subagents' },
    // Looked at again every 5 s (a lost report of a child's end is read then), answered at `until`.
    state: (s) =>
      expect(s.state.pause).toMatchObject({ reason: 'subagents', until: new Date(T0 + 1000 + 30_000).toISOString(), wake_at: new Date(T0 + 1000 + 5_000).toISOString(), details: { subagent_ids: ['sess_c1', 'sess_c2'] } }),
  },
  {
    name: 'wait: a recheck before timeout_ms with nothing new decides nothing (the run keeps waiting)',
    given: waitingFor(['c1', 'c2']),
    when: { type: 'wake' },
    now: T0 + 1000 + 5_000,
    then: [],
    effect: { type: 'none' },
  },
  {
    name: 'wait: one child ended, another still runs: recorded (subagent.completed), the parent keeps waiting',
    given: waitingFor(['c1', 'c2']),
    when: { type: 'subagent_ended', outcome: outcome('c1', 'completed', 'one') },
    then: ['subagent_ended'],
    effect: { type: 'none' },
    state: (s) => expect([s.status, s.state.subagents!.map((c) => c.status)]).toEqual(['waiting_for_subagents', ['completed', 'queued']]),
  },
  {
    name: 'wait: all done: the parent resumes with their final texts and statuses as the tool result',
    given: [...waitingFor(['c1', 'c2']), { type: 'subagent_ended', outcome: outcome('c1', 'completed', 'one') }],
    when: { type: 'subagent_ended', outcome: outcome('c2', 'completed', 'two') },
    then: [
      'subagent_ended',
      'resumed',
      {
        type: 'tool_finished',
        tool_call_id: 'call_w',
        result: {
          ok: true,
          result: {
            timed_out: false,
            subagents: [
              { subagent_id: 'sess_c1', name: 'c1', run_id: 'run_c1', status: 'completed', text: 'one' },
              { subagent_id: 'sess_c2', name: 'c2', run_id: 'run_c2', status: 'completed', text: 'two' },
            ],
          },
        },
      },
    ],
    effect: { type: 'resume' },
    // The children's tokens and tool calls are the parent's too; their model calls are their own.
    state: (s) => expect([s.status, s.state.pause, s.usage.input_tokens, s.usage.tool_calls, s.usage.model_calls]).toEqual(['running', null, 200, 3, 1]),
  },
  {
    name: 'wait: one failed: the parent resumes all the same, the failure in the result for the model',
    given: [...waitingFor(['c1', 'c2']), { type: 'subagent_ended', outcome: outcome('c1', 'completed', 'one') }],
    when: { type: 'subagent_ended', outcome: outcome('c2', 'failed', null) },
    then: ['subagent_ended', 'resumed', { type: 'tool_finished', result: { ok: true, result: expect.objectContaining({ subagents: [expect.objectContaining({ status: 'completed' }), expect.objectContaining({ status: 'failed', text: null })] }) } as never }],
    effect: { type: 'resume' },
  },
  {
    name: 'wait: timeout_ms passes first: the call answers timed_out with what is known',
    given: [...waitingFor(['c1', 'c2']), { type: 'subagent_ended', outcome: outcome('c1', 'completed', 'one') }],
    when: { type: 'wake' },
    now: T0 + 1000 + 30_000,
    then: ['resumed', { type: 'tool_finished', result: { ok: true, result: { timed_out: true, subagents: [expect.objectContaining({ status: 'completed' }), expect.objectContaining({ status: 'queued', text: null })] } } as never }],
    effect: { type: 'resume' },
  },
  {
    name: 'a report of a run the parent does not know (late, repeated, another run) decides nothing',
    given: [...waitingFor(['c1', 'c2']), { type: 'subagent_ended', outcome: outcome('c1', 'completed', 'one') }],
    when: { type: 'subagent_ended', outcome: outcome('c1', 'completed', 'one') },
    then: [],
    effect: { type: 'none' },
  },
  {
    name: 'close_subagent (by id or name): closed (subagent.closed) and its active run cancelled',
    given: [started, turn(), ended(), ...children(['c1']), requested(call('close_subagent', 'call_x', { subagent_id: 'c1' }))],
    when: { type: 'tick' },
    then: ['tool_started', { type: 'tool_finished', result: { ok: true, result: { subagent_id: 'sess_c1', status: 'closed' } } }, { type: 'subagent_closed', subagent_id: 'sess_c1' }, { type: 'subagents_cancel_requested', run_ids: ['run_c1'], reason: 'subagent_closed' }],
    effect: { type: 'continue' },
    state: (s) => expect(s.state.subagents![0].closed).toBe(true),
  },
  {
    name: "cancel cascades: cancelling the parent asks to cancel its subagents' active runs",
    given: [...waitingFor(['c1', 'c2']), { type: 'subagent_ended', outcome: outcome('c1', 'completed', 'one') }],
    when: { type: 'cancel_requested', requested_by: 'u' },
    then: ['cancel_requested', { type: 'subagents_cancel_requested', run_ids: ['run_c2'], reason: 'parent_cancelled' }, finishedWith('cancelled')],
    effect: { type: 'finish' },
  },
  {
    name: "a parent that ends otherwise (here tool_budget) asks to cancel its subagents' active runs too (parent_ended)",
    limits: { max_tool_calls: 0 },
    given: [started, turn(), ended(), ...children(['c1', 'c2']), { type: 'subagent_ended', outcome: outcome('c1', 'completed', 'one') }, requested(call('get_time', 'call_t'))],
    when: { type: 'tick' },
    then: [{ type: 'finished', status: 'terminated', reason: 'tool_budget' }, { type: 'subagents_cancel_requested', run_ids: ['run_c2'], reason: 'parent_ended' }],
    effect: { type: 'finish' },
  },
  {
    name: 'a parent that completes while a subagent still runs asks to cancel it (parent_ended)',
    given: [started, turn(), ended(), ...children(['c1']), { type: 'pending_cleared' }, turn('msg_b')],
    when: turnOutcome({ message_id: 'msg_b', text: 'done' }),
    then: ['turn_ended', { type: 'finished', status: 'completed' }, { type: 'subagents_cancel_requested', run_ids: ['run_c1'], reason: 'parent_ended' }],
    effect: { type: 'finish' },
  },
  {
    name: 'a cancelled parent that then stops asks nothing more (its cancel cascaded already)',
    given: [started, turn(), ended(), ...children(['c1']), { type: 'pending_cleared' }, { type: 'cancel_requested', requested_by: 'u', at: T0 }],
    when: { type: 'tick' },
    then: [finishedWith('cancelled')],
    effect: { type: 'finish' },
  },
  {
    name: "an approval inside a subagent is shown on the parent's stream once (approval.requested naming the child's run); the parent keeps waiting",
    given: waitingFor(['c1']),
    when: { type: 'subagent_approval_requested', subagent_id: 'sess_c1', approval: childApproval('apr_c') },
    then: [{ type: 'subagent_approval_relayed', subagent_id: 'sess_c1', approval: childApproval('apr_c') }],
    effect: { type: 'none' },
    state: (s) => expect([s.status, s.state.subagents![0].approvals]).toEqual(['waiting_for_subagents', ['apr_c']]),
  },
  {
    name: 'an approval inside a subagent shown already (a recheck, a repeated report) decides nothing',
    given: [...waitingFor(['c1']), { type: 'subagent_approval_relayed', subagent_id: 'sess_c1', approval: childApproval('apr_c') }],
    when: { type: 'subagent_approval_requested', subagent_id: 'sess_c1', approval: childApproval('apr_c') },
    then: [],
    effect: { type: 'none' },
  },
  {
    name: 'an approval of a subagent the run does not know, or reported to an ended parent, decides nothing',
    given: [...waitingFor(['c1']), { type: 'finished', status: 'cancelled', at: T0 }],
    when: { type: 'subagent_approval_requested', subagent_id: 'sess_c1', approval: childApproval('apr_c') },
    then: [],
    effect: { type: 'none' },
  },
  {
    name: 'an approval of a subagent that is not this run\'s decides nothing',
    given: waitingFor(['c1']),
    when: { type: 'subagent_approval_requested', subagent_id: 'sess_other', approval: childApproval('apr_c') },
    then: [],
    effect: { type: 'none' },
  },
  {
    name: "budget exhaustion by a child: its tokens count toward the parent's max_total_tokens, the parent ends token_budget",
    limits: { max_total_tokens: 100 },
    given: waitingFor(['c1']),
    when: { type: 'subagent_ended', outcome: outcome('c1', 'completed', 'one') },
    then: ['subagent_ended', 'resumed', 'tool_finished'],
    effect: { type: 'resume' },
    state: (s) => {
      expect(s.usage.input_tokens).toBe(100 + 0);
      const next = decide(evolve(s, { type: 'pending_cleared' }), { type: 'tick' }, env());
      expect(next.events).toEqual([expect.objectContaining({ type: 'finished', status: 'terminated', reason: 'token_budget' })]);
    },
  },

  // ---- pauses (CONTRACT 17): ask_user, timers, callbacks, quota
  {
    name: 'ask_user pauses the run for input (tool.started + run.input_requested), expiring after INPUT_TTL',
    given: [started, turn(), ended(), requested(call('ask_user', 'call_1', { question: 'Which order?' }))],
    when: { type: 'tick' },
    then: [{ type: 'input_requested', tool_call_id: 'call_1', question: 'Which order?', expires_at: T0 + 1000 + 3_600_000 }, { type: 'waiting', status: 'waiting_for_input', reason: 'input_required' }],
    effect: { type: 'wait', status: 'waiting_for_input' },
    state: (s) => {
      expect([s.status, s.state.pending[0].status, s.usage.tool_calls]).toEqual(['waiting_for_input', 'awaiting_input', 1]);
      expect(s.state.pause).toMatchObject({ reason: 'input', tool_call_id: 'call_1', until: new Date(T0 + 1000 + 3_600_000).toISOString(), details: { question: 'Which order?' } });
    },
  },
  {
    name: 'ask_user without a question fails the call (invalid_tool_arguments), the run goes on',
    given: [started, turn(), ended(), requested(call('ask_user', 'call_1', {}))],
    when: { type: 'tick' },
    then: [{ type: 'tool_finished', not_started: true, result: { ok: false, error: expect.objectContaining({ code: 'invalid_tool_arguments' }) } as never }],
    effect: { type: 'continue' },
  },
  {
    name: 'the next user input answers ask_user: the same run resumes with it as the tool result (step count kept)',
    given: [started, turn(), ended(), requested(call('ask_user', 'call_1', { question: 'Which order?' })), ...pauseFor('input')],
    when: { type: 'input_answered', message_id: 'msg_ans', text: 'O-1001' },
    then: ['resumed', { type: 'tool_finished', tool_call_id: 'call_1', result: { ok: true, result: { answer: 'O-1001', message_id: 'msg_ans' } } }],
    effect: { type: 'resume' },
    state: (s) => expect([s.status, s.stepCount, s.state.pause, s.state.pending[0].status]).toEqual(['running', 1, null, 'completed']),
  },
  {
    name: 'an input for a run that no longer waits for input decides nothing (the input starts a run of its own)',
    given: [started, turn(), ended(), requested(call('ask_user', 'call_1', { question: 'q' })), ...pauseFor('input'), { type: 'cancel_requested', requested_by: 'u', at: T0 }, finishedEvent('cancelled')],
    when: { type: 'input_answered', message_id: 'msg_ans', text: 'late' },
    then: [],
    effect: { type: 'none' },
  },
  {
    name: 'an unanswered ask_user expires the run at its wake time',
    given: [started, turn(), ended(), requested(call('ask_user', 'call_1', { question: 'q' })), ...pauseFor('input')],
    when: { type: 'wake' },
    now: T0 + 1000 + 3_600_000,
    then: [finishedWith('expired', { error: { code: 'input_expired', message: 'the question to the user was not answered in time' } })],
    effect: { type: 'finish' },
    state: (s) => expect([s.status, s.state.pause ?? null, s.state.pending]).toEqual(['expired', null, []]),
  },
  {
    name: 'a wake before the input expires changes nothing',
    given: [started, turn(), ended(), requested(call('ask_user', 'call_1', { question: 'q' })), ...pauseFor('input')],
    when: { type: 'wake' },
    now: T0 + 5000,
    then: [],
    effect: { type: 'none' },
  },
  {
    name: 'a cancel of a run waiting for input cancels it at once',
    given: [started, turn(), ended(), requested(call('ask_user', 'call_1', { question: 'q' })), ...pauseFor('input')],
    when: { type: 'cancel_requested', requested_by: 'u' },
    then: ['cancel_requested', finishedWith('cancelled')],
    effect: { type: 'finish' },
  },
  {
    name: 'wait {seconds} pauses the run until then (waiting_for_timer, wake_at = until)',
    given: [started, turn(), ended(), requested(call('wait', 'call_1', { seconds: 30 }))],
    when: { type: 'tick' },
    then: [{ type: 'timer_set', tool_call_id: 'call_1', until: T0 + 31_000, requested_until: T0 + 31_000 }, { type: 'waiting', status: 'waiting_for_timer', reason: 'timer' }],
    effect: { type: 'wait', status: 'waiting_for_timer' },
    state: (s) => expect(s.state.pause).toMatchObject({ reason: 'timer', until: new Date(T0 + 31_000).toISOString(), wake_at: new Date(T0 + 31_000).toISOString() }),
  },
  {
    name: 'wait_until a time past the deadline sleeps until the deadline only',
    given: [started, turn(), ended(), requested(call('wait_until', 'call_1', { time: '2026-01-02T00:00:00Z' }))],
    when: { type: 'tick' },
    then: [{ type: 'timer_set', until: T0 + 300_000, requested_until: Date.parse('2026-01-02T00:00:00Z') }, 'waiting'],
    effect: { type: 'wait', status: 'waiting_for_timer' },
  },
  {
    name: 'wait_until a time already past answers at once',
    given: [started, turn(), ended(), requested(call('wait_until', 'call_1', { time: '2025-12-31T00:00:00Z' }))],
    when: { type: 'tick' },
    then: ['tool_started', { type: 'tool_finished', result: { ok: true, result: { waited_until: '2025-12-31T00:00:00.000Z', waited_ms: 0 } } }],
    effect: { type: 'continue' },
  },
  {
    name: 'wait with bad seconds fails the call',
    given: [started, turn(), ended(), requested(call('wait', 'call_1', { seconds: -1 }))],
    when: { type: 'tick' },
    then: [{ type: 'tool_finished', not_started: true }],
    effect: { type: 'continue' },
  },
  {
    name: 'the timer rings at its time: the call completes and the same run resumes',
    given: [started, turn(), ended(), requested(call('wait', 'call_1', { seconds: 30 })), ...pauseFor('timer')],
    when: { type: 'wake' },
    now: T0 + 31_000,
    then: ['resumed', { type: 'tool_finished', tool_call_id: 'call_1', result: { ok: true, result: { waited_until: new Date(T0 + 31_000).toISOString(), waited_ms: 30_000 } } }],
    effect: { type: 'resume' },
    state: (s) => expect([s.status, s.stepCount, s.state.pause]).toEqual(['running', 1, null]),
  },
  {
    name: 'a timer woken early (another node, a clock skew) changes nothing',
    given: [started, turn(), ended(), requested(call('wait', 'call_1', { seconds: 30 })), ...pauseFor('timer')],
    when: { type: 'wake' },
    now: T0 + 30_999,
    then: [],
    effect: { type: 'none' },
  },
  {
    name: 'a timer woken twice rings once (the second finds the run running)',
    given: [started, turn(), ended(), requested(call('wait', 'call_1', { seconds: 30 })), ...pauseFor('timer'), { type: 'resumed' }],
    when: { type: 'wake' },
    now: T0 + 40_000,
    then: [],
    effect: { type: 'none' },
  },
  {
    name: 'a timer bounded by the deadline ends the run (terminated, deadline) when it rings',
    given: [started, turn(), ended(), requested(call('wait_until', 'call_1', { time: '2026-01-02T00:00:00Z' })), ...pauseFor('timer_past_deadline')],
    when: { type: 'wake' },
    now: T0 + 300_000,
    then: ['resumed', finishedWith('terminated', { reason: 'deadline' })],
    effect: { type: 'finish' },
  },
  {
    name: 'a cancelled timer run does not ring',
    given: [started, turn(), ended(), requested(call('wait', 'call_1', { seconds: 30 })), ...pauseFor('timer'), { type: 'cancel_requested', requested_by: 'u', at: T0 }, finishedEvent('cancelled')],
    when: { type: 'wake' },
    now: T0 + 40_000,
    then: [],
    effect: { type: 'none' },
  },
  {
    name: 'a tool that may answer by callback gets a token: its hash is durable before it runs',
    given: [started, turn(), ended(), requested(call('hook_tool'))],
    when: { type: 'tick' },
    then: [{ type: 'tool_started', attempt: 1, callback_token_hash: HASH }],
    effect: { type: 'run_tool', commit_start_first: true, callback_token: 'cbt_secret' },
    state: (s) => expect(s.state.pending[0].callback_token_hash).toBe(HASH),
  },
  {
    name: 'the tool answered 202 {"callback": true}: the run waits for the callback until callback_timeout_ms',
    given: [started, turn(), ended(), requested(call('hook_tool')), { ...toolStarted(), callback_token_hash: HASH } as RunEvent],
    when: { type: 'tool_deferred', tool_call_id: 'call_1' },
    then: [{ type: 'callback_awaited', tool_call_id: 'call_1', expires_at: T0 + 1000 + 60_000 }, { type: 'waiting', status: 'waiting_for_callback', reason: 'callback' }],
    effect: { type: 'wait', status: 'waiting_for_callback' },
  },
  {
    name: 'the callback with its token answers the call and resumes the run',
    given: callbackWaiting(),
    when: { type: 'callback_received', tool_call_id: 'call_1', token_hash: HASH, admin: false, output: { shipped: true } },
    then: ['resumed', { type: 'tool_finished', result: { ok: true, result: { shipped: true } } }],
    effect: { type: 'resume' },
  },
  {
    name: 'an admin answers a callback without its token; an error fails the call',
    given: callbackWaiting(),
    when: { type: 'callback_received', tool_call_id: 'call_1', token_hash: null, admin: true, error: { message: 'no stock' } },
    then: ['resumed', { type: 'tool_finished', result: { ok: false, error: { code: 'tool_failed', message: 'no stock', retryable: false } } }],
    effect: { type: 'resume' },
  },
  {
    name: 'a callback that comes before the tool\'s 202 is recorded; the executor then finds the call resolved',
    given: [started, turn(), ended(), requested(call('hook_tool')), { ...toolStarted(), callback_token_hash: HASH } as RunEvent],
    when: { type: 'callback_received', tool_call_id: 'call_1', token_hash: HASH, admin: false, output: 1 },
    then: [{ type: 'tool_finished', result: { ok: true, result: 1 } }],
    effect: { type: 'none' },
    state: (s) => expect(decide(s, { type: 'tool_deferred', tool_call_id: 'call_1' }, env()).events).toEqual([]),
  },
  {
    name: 'no callback within callback_timeout_ms fails the call (tool_timeout) and resumes the run',
    given: callbackWaiting(),
    when: { type: 'wake' },
    now: T0 + 1000 + 60_000,
    then: ['resumed', { type: 'tool_finished', result: { ok: false, error: expect.objectContaining({ code: 'tool_timeout' }) } as never }],
    effect: { type: 'resume' },
  },
  {
    name: 'the tenant is over its spend limit before a model call: the run waits for quota',
    given: [started],
    when: { type: 'tick' },
    quota: { exceeded: true, resets_at: T0 + 86_400_000, details: { limit: '1' } },
    then: [{ type: 'quota_reached', resets_at: T0 + 86_400_000 }, { type: 'waiting', status: 'waiting_for_quota', reason: 'quota' }],
    effect: { type: 'wait', status: 'waiting_for_quota' },
    state: (s) => expect(s.state.pause).toMatchObject({ reason: 'quota', until: new Date(T0 + 86_400_000).toISOString(), wake_at: new Date(T0 + 1000 + 5000).toISOString() }),
  },
  {
    name: 'a quota wait resumes when the limit allows again (raised, or the window rolled over)',
    given: [started, ...pauseFor('quota')],
    when: { type: 'wake' },
    quota: { exceeded: false },
    then: ['resumed'],
    effect: { type: 'resume' },
    state: (s) => expect([s.status, s.state.pause]).toEqual(['running', null]),
  },
  {
    name: 'a quota wait stays while the limit is still reached',
    given: [started, ...pauseFor('quota')],
    when: { type: 'wake' },
    quota: { exceeded: true, resets_at: T0 + 86_400_000, details: {} },
    then: [],
    effect: { type: 'none' },
  },
  // ---- the rest
  { name: 'an expired queued run', given: [], when: { type: 'queue_expired' }, then: [finishedWith('expired', { error: null })], effect: { type: 'finish' } },
  { name: 'a run started meanwhile does not expire from the queue', given: [started], when: { type: 'queue_expired' }, then: [], effect: { type: 'none' } },
  {
    name: 'an approval not decided in time expires its waiting run',
    given: awaitingApproval,
    when: { type: 'approval_expired', approval_id: 'apr_1' },
    then: [finishedWith('expired', { error: { code: 'approval_expired', message: 'approval apr_1 was not decided in time' } })],
    effect: { type: 'finish' },
  },
  {
    name: 'an approval that expires after it was decided changes nothing',
    given: [...awaitingApproval, { type: 'approval_decided', approval_id: 'apr_1', tool_call_id: 'call_1', decision: 'approve', decided_by: 'u', reason: null }, { type: 'resumed' }],
    when: { type: 'approval_expired', approval_id: 'apr_1' },
    then: [],
    effect: { type: 'none' },
  },
  // ---- input that arrives as a run ends: taken by another turn of the same run while it may go on
  {
    name: 'one input steered as a completed run was ending (steps left): the run goes on and takes it, no follow-up',
    given: [started, turn(), ended(), { type: 'finished', status: 'completed', at: T0 }],
    when: { type: 'leftover_inputs', inputs: [input('msg_x')] },
    then: [],
    effect: { type: 'take_leftovers', inputs: [input('msg_x')] },
  },
  {
    name: '51 leftovers of a completed run with steps left: all taken by its next turn, in commit order, none repeated',
    given: [started, turn(), ended(), { type: 'finished', status: 'completed', at: T0 }],
    when: { type: 'leftover_inputs', inputs: [...FIFTY, input('msg_y'), input('msg_l3')] },
    then: [],
    effect: { type: 'take_leftovers', inputs: [...FIFTY, input('msg_y')] },
  },
  {
    name: 'a run that failed with steps left does not go on: its leftovers go to ONE follow-up run',
    given: [started, turn(), ended(), { type: 'finished', status: 'failed', error: { code: 'model_error', message: 'x' }, at: T0 }],
    when: { type: 'leftover_inputs', inputs: [input('msg_x'), input('msg_y')] },
    then: [],
    effect: { type: 'queue_follow_up', run: { first: input('msg_x'), rest: [input('msg_y')] } },
  },
  // ---- FIFO follow-up: ALL leftovers of a run that may not go on, in commit order, into ONE run
  {
    name: 'one leftover of a run that completed its last step becomes one follow-up run',
    given: [started, turn(), ended(), { type: 'finished', status: 'completed', at: T0 }],
    limits: { max_steps: 1 },
    when: { type: 'leftover_inputs', inputs: [input('msg_x')] },
    then: [],
    effect: { type: 'queue_follow_up', run: { first: input('msg_x'), rest: [] } },
  },
  {
    name: 'two leftovers of a run with no step left go into ONE follow-up run, in commit order (the first its user message)',
    given: [started, turn(), ended(), { type: 'finished', status: 'completed', at: T0 }],
    limits: { max_steps: 1 },
    when: { type: 'leftover_inputs', inputs: [input('msg_x'), input('msg_y')] },
    then: [],
    effect: { type: 'queue_follow_up', run: { first: input('msg_x'), rest: [input('msg_y')] } },
  },
  {
    name: '50 leftovers of a run with no step left go into ONE follow-up run, in commit order, none dropped or repeated',
    given: [started, turn(), ended(), { type: 'finished', status: 'completed', at: T0 }],
    limits: { max_steps: 1 },
    when: { type: 'leftover_inputs', inputs: [...FIFTY, input('msg_l3')] },
    then: [],
    effect: { type: 'queue_follow_up', run: { first: FIFTY[0], rest: FIFTY.slice(1) } },
  },
  {
    name: 'leftovers of a run that failed, terminated or expired go to one follow-up run too',
    given: [started, turn(), ended(), { type: 'finished', status: 'terminated', reason: 'max_steps', at: T0 }],
    when: { type: 'leftover_inputs', inputs: [input('msg_x'), input('msg_y')] },
    then: [],
    effect: { type: 'queue_follow_up', run: { first: input('msg_x'), rest: [input('msg_y')] } },
  },
  {
    name: 'a waiting run keeps its inbox: no follow-up (its next turn after resuming takes them)',
    given: awaitingApproval,
    when: { type: 'leftover_inputs', inputs: [input('msg_x'), input('msg_y')] },
    then: [],
    effect: { type: 'none' },
  },
  {
    name: 'a cancelling run keeps its inbox until it is cancelled: no follow-up yet',
    given: [started, turn('msg_s'), { type: 'cancel_requested', requested_by: 'u', at: T0 }],
    when: { type: 'leftover_inputs', inputs: [input('msg_x')] },
    then: [],
    effect: { type: 'none' },
  },
  {
    name: 'leftovers racing a cancel: the cancelled run leaves them all, in order, to ONE follow-up run',
    given: [started, turn('msg_s'), { type: 'cancel_requested', requested_by: 'u', at: T0 }, { type: 'finished', status: 'cancelled', at: T0 }],
    when: { type: 'leftover_inputs', inputs: [input('msg_a'), input('msg_b'), input('msg_c')] },
    then: [],
    effect: { type: 'queue_follow_up', run: { first: input('msg_a'), rest: [input('msg_b'), input('msg_c')] } },
  },
  {
    name: 'a queued run cancelled before it started leaves its steered inputs to one follow-up run',
    given: [{ type: 'cancel_requested', requested_by: 'u', at: T0 }, { type: 'finished', status: 'cancelled', at: T0 }],
    when: { type: 'leftover_inputs', inputs: [input('msg_a'), input('msg_b')] },
    then: [],
    effect: { type: 'queue_follow_up', run: { first: input('msg_a'), rest: [input('msg_b')] } },
  },
  // ---- access re-checked as a queued run starts (CONTRACT 7)
  {
    name: 'a queued run whose owner still has a key starts with its frozen configuration',
    given: [],
    ownerAccess: true,
    when: { type: 'tick' },
    then: ['started'],
    effect: { type: 'continue' },
    state: (s) => expect(s).toMatchObject({ status: 'running', model: 'scripted' }),
  },
  {
    name: "a queued run whose owner's key was revoked fails access_revoked as it starts (no model call)",
    given: [],
    ownerAccess: false,
    when: { type: 'tick' },
    then: ['started', finishedWith('failed', { error: { code: 'access_revoked', message: "the run's owner no longer has a valid key: the queued run was not started" } })],
    effect: { type: 'finish' },
    state: (s) => expect(s.stepCount).toBe(0),
  },
  {
    name: 'a running run is not re-checked (only a queued run as it starts)',
    given: [started],
    ownerAccess: false,
    when: { type: 'tick' },
    then: ['turn_begun'],
    effect: { type: 'call_model' },
  },
  {
    name: 'leftovers of a run refused for access_revoked are rejected, not followed up',
    given: [started, { type: 'finished', status: 'failed', error: { code: 'access_revoked', message: 'x' }, at: T0 }],
    when: { type: 'leftover_inputs', inputs: [input('msg_a'), input('msg_b')] },
    then: [],
    effect: { type: 'reject_inputs', inputs: [input('msg_a'), input('msg_b')] },
  },
  {
    name: 'an ended run with nothing left over queues nothing',
    given: [started, turn(), ended(), { type: 'finished', status: 'completed', at: T0 }],
    when: { type: 'leftover_inputs', inputs: [] },
    then: [],
    effect: { type: 'none' },
  },
  { name: 'an active run queues no follow-up for its inbox', given: [started], when: { type: 'leftover_inputs', inputs: [input('msg_x')] }, then: [], effect: { type: 'none' } },
  {
    name: 'an unexpected failure closes the open message and fails the run',
    given: [started, turn('msg_s')],
    when: { type: 'failed_unexpectedly' },
    then: [{ type: 'turn_ended', message_id: 'msg_s' }, finishedWith('failed', { error: { code: 'internal_error', message: 'the run failed unexpectedly' } })],
    effect: { type: 'finish' },
  },
];

describe('run decider: given(events).when(observation).then(events, effect)', () => {
  it.each(TABLE.map((r) => [r.name, r] as const))('%s', (_name, row) => {
    const state = given(row.given, initial(row.limits));
    const d = decide(state, row.when, { ...env(row.now, row.next, row.quota, row.ownerAccess), ...(row.lastAgent !== undefined ? { lastAgent: row.lastAgent } : {}) });
    expect(d.events).toHaveLength(row.then.length);
    row.then.forEach((t, i) => expect(d.events[i]).toMatchObject(typeof t === 'string' ? { type: t } : t));
    expect(d.effect).toMatchObject(row.effect);
    const after = d.events.reduce(evolve, state);
    row.state?.(after);
  });

  it('terminal is final: nothing moves a finished run', () => {
    const done = given([started, turn(), { type: 'finished', status: 'completed', at: T0 }]);
    expect(decide(done, { type: 'tick' }, env()).effect).toEqual({ type: 'finish' });
    expect(() => decide(done, { type: 'cancel_requested', requested_by: 'u' }, env())).toThrow(DomainError);
    expect(() => evolve(done, { type: 'resumed' })).toThrow(DomainError);
  });

  it('client tool outputs must answer pending calls; the last one resumes the run', () => {
    const waiting = given([
      started,
      turn(),
      ended(),
      requested(call('lookup_customer', 'c1'), call('lookup_customer', 'c2')),
      { type: 'tool_handed_to_client', tool_call_id: 'c1' },
      { type: 'waiting', status: 'waiting_for_tool', reason: 'client_tool' },
    ]);
    expect(() => decide(waiting, { type: 'client_tool_outputs', outputs: [{ tool_call_id: 'c2', output: 1 }] }, env())).toThrow(
      expect.objectContaining({ code: 'tool_output_not_expected' }),
    );
    const d = decide(waiting, { type: 'client_tool_outputs', outputs: [{ tool_call_id: 'c1', output: { name: 'x' } }] }, env());
    expect(d.events.map((e) => e.type)).toEqual(['tool_finished', 'resumed']);
    expect(d.effect).toEqual({ type: 'resume' });
  });

  it('an approval decision for a run that no longer waits is approval_not_pending', () => {
    expect(() => decide(given([started]), { type: 'approval_decided', approval_id: 'apr_1', tool_call_id: 'c1', decision: 'approve', decided_by: 'u', reason: null }, env())).toThrow(
      expect.objectContaining({ code: 'approval_not_pending' }),
    );
  });
});

describe('pauses: answers, refusals and races (CONTRACT 17)', () => {
  const answer: Observation = { type: 'input_answered', message_id: 'msg_ans', text: 'yes' };
  const cancel: Observation = { type: 'cancel_requested', requested_by: 'u' };
  /** Two observations on the same saved state, as two writers would decide them; the second re-decides on what the first committed (the version guard). */
  function race(s: RunState, first: Observation, second: Observation) {
    const d1 = decide(s, first, env());
    const after = d1.events.reduce(evolve, s);
    let d2: ReturnType<typeof decide> | Error;
    try {
      d2 = decide(after, second, env());
    } catch (e) {
      d2 = e as Error;
    }
    return { d1, d2, after: d2 instanceof Error ? after : d2.events.reduce(evolve, after) };
  }
  const waitingInput = () => given([started, turn(), ended(), requested(call('ask_user', 'call_1', { question: 'q' })), ...pauseFor('input')]);

  it('an answer racing a cancel: the answer first -> the run resumes, the cancel then stops it (cancelling); nothing lost', () => {
    const { d1, d2, after } = race(waitingInput(), answer, cancel);
    expect(d1.effect).toEqual({ type: 'resume' });
    expect((d2 as ReturnType<typeof decide>).events.map((e) => e.type)).toEqual(['cancel_requested']);
    expect(after.status).toBe('cancelling');
    expect(after.state.pending[0]).toMatchObject({ status: 'completed', result: { answer: 'yes' } });
  });

  it('an answer racing a cancel: the cancel first -> cancelled, the answer decides nothing (its input becomes a run of its own)', () => {
    const { d1, d2, after } = race(waitingInput(), cancel, answer);
    expect(d1.events.map((e) => e.type)).toEqual(['cancel_requested', 'finished']);
    expect(d2).toEqual({ events: [], effect: { type: 'none' } });
    expect(after.status).toBe('cancelled');
  });

  it('a callback racing a cancel: exactly one wins; the late one is callback_not_expected', () => {
    const s = given(callbackWaiting());
    const cb: Observation = { type: 'callback_received', tool_call_id: 'call_1', token_hash: HASH, admin: false, output: 1 };
    const first = race(s, cb, cancel);
    expect(first.after.status).toBe('cancelling');
    expect(first.after.state.pending[0]).toMatchObject({ status: 'completed', result: 1 });
    const second = race(s, cancel, cb);
    expect(second.after.status).toBe('cancelled');
    expect(second.d2).toMatchObject({ code: 'callback_not_expected' });
  });

  it('a timer racing a cancel: one wins', () => {
    const s = given([started, turn(), ended(), requested(call('wait', 'call_1', { seconds: 30 })), ...pauseFor('timer')]);
    const late = { ...env(T0 + 40_000) };
    const rung = decide(s, { type: 'wake' }, late);
    const afterRing = rung.events.reduce(evolve, s);
    expect(decide(afterRing, cancel, late).events.map((e) => e.type)).toEqual(['cancel_requested']);
    const cancelled = decide(s, cancel, late).events.reduce(evolve, s);
    expect(decide(cancelled, { type: 'wake' }, late)).toEqual({ events: [], effect: { type: 'none' } });
  });

  it('a repeated callback is callback_not_expected; a wrong token is unauthorized', () => {
    const s = given(callbackWaiting());
    const cb = (token_hash: string | null): Observation => ({ type: 'callback_received', tool_call_id: 'call_1', token_hash, admin: false, output: 1 });
    expect(() => decide(s, cb('b'.repeat(64)), env())).toThrow(expect.objectContaining({ code: 'unauthorized' }));
    expect(() => decide(s, cb(null), env())).toThrow(expect.objectContaining({ code: 'unauthorized' }));
    const answered = decide(s, cb(HASH), env()).events.reduce(evolve, s);
    expect(() => decide(answered, cb(HASH), env())).toThrow(expect.objectContaining({ code: 'callback_not_expected' }));
    expect(() => decide(s, { ...cb(HASH), tool_call_id: 'call_x' } as Observation, env())).toThrow(expect.objectContaining({ code: 'callback_not_expected' }));
  });

  it('a run resumed with its pause unresolved (a take-over) waits again with the same status', () => {
    for (const [events, status] of [
      [pauseFor('input'), 'waiting_for_input'],
      [pauseFor('timer'), 'waiting_for_timer'],
    ] as const) {
      const s = given([started, turn(), ended(), requested(call(status === 'waiting_for_input' ? 'ask_user' : 'wait', 'call_1', {})), ...events]);
      expect(decide(s, { type: 'lease_resumed' }, env()).effect).toEqual({ type: 'wait', status });
    }
  });
});

describe('admit: what a new input does to its session (CONCURRENCY)', () => {
  const cases: Array<[ConcurrencyMode | undefined, boolean, ConcurrencyMode, ReturnType<typeof admit>]> = [
    ['reject', false, 'reject', 'queue'],
    ['steer', false, 'reject', 'queue'],
    ['interrupt', false, 'reject', 'queue'],
    [undefined, false, 'steer', 'queue'],
    ['reject', true, 'enqueue', 'reject'],
    ['enqueue', true, 'reject', 'queue'],
    ['steer', true, 'reject', 'steer'],
    ['interrupt', true, 'reject', 'interrupt'],
    [undefined, true, 'reject', 'reject'],
    [undefined, true, 'enqueue', 'queue'],
    [undefined, true, 'steer', 'steer'],
    [undefined, true, 'interrupt', 'interrupt'],
  ];
  it.each(cases)('requested %s, active run %s, session default %s: %s', (requested, hasActiveRun, defaultConcurrency, expected) => {
    expect(admit(requested, { hasActiveRun, defaultConcurrency })).toBe(expected);
  });
});

describe('toolRetryDelayMs (backoff with jitter)', () => {
  it('doubles per retry within [ceiling/2, ceiling], capped, and spreads calls apart', () => {
    const ids = Array.from({ length: 200 }, (_, i) => `call_${i}`);
    for (const [failed, lo, hi] of [
      [1, 250, 500],
      [2, 500, 1000],
      [3, 1000, 2000],
      [10, 5000, 10000],
    ]) {
      const d = ids.map((id) => toolRetryDelayMs(id, failed));
      expect(Math.min(...d)).toBeGreaterThanOrEqual(lo);
      expect(Math.max(...d)).toBeLessThanOrEqual(hi);
      expect(new Set(d).size).toBeGreaterThan(50);
    }
    expect(toolRetryDelayMs('call_x', 1)).toBe(toolRetryDelayMs('call_x', 1));
  });
});
