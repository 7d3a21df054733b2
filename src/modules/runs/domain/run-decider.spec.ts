import { DomainError } from '../../../common/errors/domain-error';
import { newTestRun } from '../../../../test/helpers/run-fixture';
import { DEFAULT_LIMITS, PendingToolCall, RunProps, SteeredInput } from './run.aggregate';
import { decide, DecideEnv, Effect, evolve, Observation, RunEvent, ToolFacts } from './run-decider';

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
};

function initial(limits: Partial<RunProps['limits']> = {}): RunProps {
  return newTestRun({ userMessageId: 'msg_in', limits, now: new Date(T0), queueTtlMs: 3_600_000 }).snapshot() as RunProps;
}

function env(now = T0 + 1000): DecideEnv {
  let n = 0;
  return { now, newId: (p) => `${p}_${++n}`, tool: (name) => TOOLS[name] ?? null, approvalsAvailable: true, approvalTtlMs: 60_000 };
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

function given(events: RunEvent[], start = initial()): RunProps {
  return events.reduce(evolve, start);
}

interface Row {
  name: string;
  given: RunEvent[];
  limits?: Partial<RunProps['limits']>;
  when: Observation;
  now?: number;
  /** Expected events: a prefix-free list of types, or (for detail) the events themselves. */
  then: Array<RunEvent['type'] | Partial<RunEvent>>;
  effect: Partial<Effect>;
  /** Checks of the state after the events. */
  state?: (s: RunProps) => void;
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
  // ---- the rest
  { name: 'an expired queued run', given: [], when: { type: 'expired', error: null }, then: [finishedWith('expired')], effect: { type: 'finish' } },
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
    const d = decide(state, row.when, env(row.now));
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
