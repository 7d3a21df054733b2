import { maskSecrets, projectContent, projectEvent } from './event-projector';
import { Audience, RUN_EVENT_TYPES, RunEventType, StoredRunEvent } from './run-event';

const visibility = (name: string) => (name === 'lookup_customer' ? 'private' : name === 'get_order' ? 'public' : undefined);
const R = { redacted: true };

const secretArgs = { order_id: 'O-1001', api_key: 'k1', nested: { password: 'p', list: [{ token: 't', ok: 1 }] } };
const maskedArgs = { order_id: 'O-1001', api_key: '***', nested: { password: '***', list: [{ token: '***', ok: 1 }] } };
const secretResult = { status: 'paid', Authorization: 'Bearer x', customer: { secret_note: 's', name: 'Ann' } };
const maskedResult = { status: 'paid', Authorization: '***', customer: { secret_note: '***', name: 'Ann' } };
const privArgs = { email: 'ann@example.com' };
const privResult = { name: 'Ann', tier: 'gold' };
const toolError = { code: 'tool_failed', message: 'customer ann@example.com not found', retryable: false };

interface Row {
  name: string;
  type: RunEventType;
  data: Record<string, unknown>;
  member: Record<string, unknown>;
}

/** Every event type, with what a member sees; admins always see `data` unchanged. */
const TABLE: Row[] = [
  { name: 'run.started', type: 'run.started', data: { status: 'running' }, member: { status: 'running' } },
  { name: 'run.waiting', type: 'run.waiting', data: { status: 'waiting_for_approval', reason: 'approval' }, member: { status: 'waiting_for_approval', reason: 'approval' } },
  { name: 'run.resumed', type: 'run.resumed', data: { status: 'running' }, member: { status: 'running' } },
  { name: 'run.cancel_requested', type: 'run.cancel_requested', data: { requested_by: 'user_a1' }, member: { requested_by: 'user_a1' } },
  { name: 'run.input', type: 'run.input', data: { message_id: 'msg_2' }, member: { message_id: 'msg_2' } },
  {
    name: 'run.input_requested (the question is for the user: never redacted)',
    type: 'run.input_requested',
    data: { question: 'Which order?', tool_call_id: 'call_1', expires_at: '2026-01-01T00:00:00.000Z' },
    member: { question: 'Which order?', tool_call_id: 'call_1', expires_at: '2026-01-01T00:00:00.000Z' },
  },
  {
    name: 'agent.handoff (agents and the reason are never redacted)',
    type: 'agent.handoff',
    data: { from_agent: 'triage_agent', to_agent: 'billing_agent', reason: 'refund', tool_call_id: 'call_1' },
    member: { from_agent: 'triage_agent', to_agent: 'billing_agent', reason: 'refund', tool_call_id: 'call_1' },
  },
  {
    name: 'subagent.created (names and ids are never redacted)',
    type: 'subagent.created',
    data: { subagent_id: 'sess_c', name: 'r1', agent_id: 'assistant', run_id: 'run_c', tool_call_id: 'call_1' },
    member: { subagent_id: 'sess_c', name: 'r1', agent_id: 'assistant', run_id: 'run_c', tool_call_id: 'call_1' },
  },
  { name: 'subagent.completed', type: 'subagent.completed', data: { subagent_id: 'sess_c', run_id: 'run_c', status: 'completed' }, member: { subagent_id: 'sess_c', run_id: 'run_c', status: 'completed' } },
  { name: 'subagent.closed', type: 'subagent.closed', data: { subagent_id: 'sess_c' }, member: { subagent_id: 'sess_c' } },
  { name: 'message.started', type: 'message.started', data: { message_id: 'msg_1', role: 'assistant' }, member: { message_id: 'msg_1', role: 'assistant' } },
  {
    name: 'message.delta (text is never redacted)',
    type: 'message.delta',
    data: { message_id: 'msg_1', content_index: 0, delta: 'my password is x' },
    member: { message_id: 'msg_1', content_index: 0, delta: 'my password is x' },
  },
  {
    name: 'message.completed with public and private tool parts',
    type: 'message.completed',
    data: {
      message_id: 'msg_1',
      content: [
        { type: 'text', text: 'hi' },
        { type: 'tool_call', tool_call_id: 'call_1', tool_name: 'get_order', arguments: secretArgs },
        { type: 'tool_call', tool_call_id: 'call_2', tool_name: 'lookup_customer', arguments: privArgs },
        { type: 'tool_result', tool_call_id: 'call_1', tool_name: 'get_order', ok: true, result: secretResult },
        { type: 'tool_result', tool_call_id: 'call_2', tool_name: 'lookup_customer', ok: true, result: privResult },
        { type: 'tool_result', tool_call_id: 'call_2', ok: false, error: toolError },
      ],
    },
    member: {
      message_id: 'msg_1',
      content: [
        { type: 'text', text: 'hi' },
        { type: 'tool_call', tool_call_id: 'call_1', tool_name: 'get_order', arguments: maskedArgs },
        { type: 'tool_call', tool_call_id: 'call_2', tool_name: 'lookup_customer', arguments: R },
        { type: 'tool_result', tool_call_id: 'call_1', tool_name: 'get_order', ok: true, result: maskedResult },
        { type: 'tool_result', tool_call_id: 'call_2', tool_name: 'lookup_customer', ok: true, result: R },
        { type: 'tool_result', tool_call_id: 'call_2', ok: false, error: { ...toolError, message: R } },
      ],
    },
  },
  {
    name: 'tool.requested public (secrets masked)',
    type: 'tool.requested',
    data: { tool_call_id: 'call_1', tool_name: 'get_order', arguments: secretArgs, risk: 'auto' },
    member: { tool_call_id: 'call_1', tool_name: 'get_order', arguments: maskedArgs, risk: 'auto' },
  },
  {
    name: 'tool.requested private',
    type: 'tool.requested',
    data: { tool_call_id: 'call_2', tool_name: 'lookup_customer', arguments: privArgs, risk: 'auto' },
    member: { tool_call_id: 'call_2', tool_name: 'lookup_customer', arguments: R, risk: 'auto' },
  },
  {
    name: 'tool.requested unknown tool (treated as public)',
    type: 'tool.requested',
    data: { tool_call_id: 'call_3', tool_name: 'nope', arguments: { secret: 1, x: 2 }, risk: 'auto' },
    member: { tool_call_id: 'call_3', tool_name: 'nope', arguments: { secret: '***', x: 2 }, risk: 'auto' },
  },
  {
    name: 'tool.started private',
    type: 'tool.started',
    data: { tool_call_id: 'call_2', tool_name: 'lookup_customer', attempt: 1 },
    member: { tool_call_id: 'call_2', tool_name: 'lookup_customer', attempt: 1 },
  },
  {
    name: 'tool.completed public',
    type: 'tool.completed',
    data: { tool_call_id: 'call_1', tool_name: 'get_order', result: secretResult, duration_ms: 5 },
    member: { tool_call_id: 'call_1', tool_name: 'get_order', result: maskedResult, duration_ms: 5 },
  },
  {
    name: 'tool.completed private',
    type: 'tool.completed',
    data: { tool_call_id: 'call_2', tool_name: 'lookup_customer', result: privResult, duration_ms: 5 },
    member: { tool_call_id: 'call_2', tool_name: 'lookup_customer', result: R, duration_ms: 5 },
  },
  {
    name: 'tool.failed public (message kept)',
    type: 'tool.failed',
    data: { tool_call_id: 'call_1', tool_name: 'get_order', error: toolError, duration_ms: 5 },
    member: { tool_call_id: 'call_1', tool_name: 'get_order', error: toolError, duration_ms: 5 },
  },
  {
    name: 'tool.failed private',
    type: 'tool.failed',
    data: { tool_call_id: 'call_2', tool_name: 'lookup_customer', error: toolError, duration_ms: 5 },
    member: { tool_call_id: 'call_2', tool_name: 'lookup_customer', error: { ...toolError, message: R }, duration_ms: 5 },
  },
  {
    name: 'approval.requested public',
    type: 'approval.requested',
    data: { approval_id: 'apr_1', tool_call_id: 'call_1', tool_name: 'get_order', arguments: secretArgs, risk: 'approve', expires_at: 'x' },
    member: { approval_id: 'apr_1', tool_call_id: 'call_1', tool_name: 'get_order', arguments: maskedArgs, risk: 'approve', expires_at: 'x' },
  },
  {
    name: 'approval.requested private',
    type: 'approval.requested',
    data: { approval_id: 'apr_2', tool_call_id: 'call_2', tool_name: 'lookup_customer', arguments: privArgs, risk: 'approve', expires_at: 'x' },
    member: { approval_id: 'apr_2', tool_call_id: 'call_2', tool_name: 'lookup_customer', arguments: R, risk: 'approve', expires_at: 'x' },
  },
  {
    name: 'approval.accepted',
    type: 'approval.accepted',
    data: { approval_id: 'apr_1', tool_call_id: 'call_1', decided_by: 'admin_a', reason: null },
    member: { approval_id: 'apr_1', tool_call_id: 'call_1', decided_by: 'admin_a', reason: null },
  },
  {
    name: 'approval.rejected (private tool named, arguments echoed)',
    type: 'approval.rejected',
    data: { approval_id: 'apr_2', tool_call_id: 'call_2', tool_name: 'lookup_customer', arguments: privArgs, decided_by: 'admin_a', reason: 'no' },
    member: { approval_id: 'apr_2', tool_call_id: 'call_2', tool_name: 'lookup_customer', arguments: R, decided_by: 'admin_a', reason: 'no' },
  },
  {
    name: 'usage',
    type: 'usage',
    data: { input_tokens: 1, output_tokens: 2, cached_input_tokens: 0, model_calls: 1, tool_calls: 1 },
    member: { input_tokens: 1, output_tokens: 2, cached_input_tokens: 0, model_calls: 1, tool_calls: 1 },
  },
  {
    name: 'run.finished',
    type: 'run.finished',
    data: { status: 'failed', final_message_id: null, termination_reason: null, error: { code: 'tool_failed', message: 'x' }, usage: {} },
    member: { status: 'failed', final_message_id: null, termination_reason: null, error: { code: 'tool_failed', message: 'x' }, usage: {} },
  },
];

function stored(type: RunEventType, data: Record<string, unknown>): StoredRunEvent {
  return {
    id: 'evt_1',
    tenantId: 't',
    subjectId: 's',
    sessionId: 'sess_1',
    runId: 'run_1',
    sequence: 7,
    sessionSequence: 42,
    type,
    occurredAt: new Date('2025-01-02T03:04:05.678Z'),
    data,
  };
}

describe('projectEvent', () => {
  it('the table covers every event type', () => {
    expect(new Set(TABLE.map((r) => r.type))).toEqual(new Set(RUN_EVENT_TYPES));
  });

  describe.each<[Audience]>([['admin'], ['member']])('%s', (audience) => {
    it.each(TABLE.map((r) => [r.name, r] as const))('%s', (_name, row) => {
      const input = structuredClone(row.data);
      const out = projectEvent(stored(row.type, input), audience, visibility);
      expect(out).toEqual({
        event_id: 'evt_1',
        run_id: 'run_1',
        session_id: 'sess_1',
        sequence: 7,
        session_sequence: 42,
        type: row.type,
        occurred_at: '2025-01-02T03:04:05.678Z',
        data: audience === 'admin' ? row.data : row.member,
      });
      // Pure: the stored event is never modified.
      expect(input).toEqual(row.data);
    });
  });

  it('throws for a type it does not know (exhaustive switch)', () => {
    expect(() => projectEvent(stored('bogus' as RunEventType, {}), 'member', visibility)).toThrow(/no projection/);
  });
});

describe('maskSecrets', () => {
  it.each([
    ['pass', true],
    ['password', true],
    ['db_passwd', true],
    ['client_secret', true],
    ['refresh_token', true],
    ['apiKey', true],
    ['api-key', true],
    ['API_KEY', true],
    ['authorization', true],
    ['email', false],
    ['order_id', false],
  ])('key %s masked: %s', (key, masked) => {
    expect(maskSecrets({ [key]: 'v' })).toEqual({ [key]: masked ? '***' : 'v' });
  });

  it('keeps scalars and arrays of scalars', () => {
    expect(maskSecrets([1, 'a', null])).toEqual([1, 'a', null]);
    expect(maskSecrets('token')).toBe('token');
  });
});

describe('projectContent', () => {
  const parts = [
    { type: 'tool_call', tool_call_id: 'call_9', tool_name: 'lookup_customer', arguments: privArgs },
    { type: 'tool_result', tool_call_id: 'call_9', ok: true, result: privResult },
  ];
  it('finds the tool of a tool_result without tool_name by its tool_call part', () => {
    expect(projectContent(parts, 'member', visibility)).toEqual([
      { type: 'tool_call', tool_call_id: 'call_9', tool_name: 'lookup_customer', arguments: R },
      { type: 'tool_result', tool_call_id: 'call_9', ok: true, result: R },
    ]);
  });
  it('gives admins the parts unchanged', () => {
    expect(projectContent(parts, 'admin', visibility)).toBe(parts);
  });
});
