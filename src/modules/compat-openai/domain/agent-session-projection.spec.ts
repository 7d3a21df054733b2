import type { PublicRunEvent } from '../../events/domain/run-event';
import { AgentSessionProjection } from './agent-session-projection';
import { parseInputEvents, InputProblem } from './input-events';

const SESSION = { id: 'sess_1', agent: { id: 'support_agent' }, created_at: 1700000000, metadata: {} };

function events(list: Array<[PublicRunEvent['type'], Record<string, unknown>]>, runId = 'run_1'): PublicRunEvent[] {
  return list.map(([type, data], i) => ({
    event_id: `evt_${i + 1}`,
    run_id: runId,
    session_id: 'sess_1',
    sequence: i + 1,
    session_sequence: i + 1,
    type,
    occurred_at: new Date(1700000000000 + i * 1000).toISOString(),
    data,
  }));
}

describe('AgentSessionProjection: native events -> agent.session.* events', () => {
  const turn = events([
    ['run.started', { status: 'running' }],
    ['message.started', { message_id: 'msg_a', role: 'assistant' }],
    ['message.delta', { message_id: 'msg_a', content_index: 0, delta: 'Look' }],
    ['message.completed', { message_id: 'msg_a', content: [{ type: 'text', text: 'Look' }, { type: 'tool_call', tool_call_id: 'call_1', tool_name: 'lookup_customer', arguments: { email: 'a@b' } }] }],
    ['tool.requested', { tool_call_id: 'call_1', tool_name: 'lookup_customer', arguments: { email: 'a@b' }, risk: 'auto' }],
    ['tool.started', { tool_call_id: 'call_1', tool_name: 'lookup_customer', attempt: 1 }],
    ['run.waiting', { status: 'waiting_for_tool', reason: 'client_tool' }],
    ['tool.completed', { tool_call_id: 'call_1', tool_name: 'lookup_customer', result: { tier: 'gold' }, duration_ms: 3 }],
    ['run.resumed', { status: 'running' }],
    ['message.started', { message_id: 'msg_b', role: 'assistant' }],
    ['message.completed', { message_id: 'msg_b', content: [{ type: 'text', text: 'Gold.' }] }],
    ['usage', { input_tokens: 10, output_tokens: 2, cached_input_tokens: 0, model_calls: 2, tool_calls: 1 }],
    ['run.finished', { status: 'completed', final_message_id: 'msg_b', termination_reason: null, error: null, usage: { input_tokens: 10, output_tokens: 2, cached_input_tokens: 0, model_calls: 2, tool_calls: 1 } }],
  ]);

  it('gives the SDK order: turn.created, in_progress, items, requires_action, terminal, then idle', () => {
    const p = new AgentSessionProjection(SESSION, (n) => n === 'lookup_customer');
    const out = turn.flatMap((e) => p.apply(e));
    expect(out.map((e) => e.type)).toEqual([
      'agent.session.turn.created',
      'agent.session.turn.in_progress',
      'agent.session.in_progress',
      'agent.session.turn.item.added',
      'agent.session.turn.output_text.delta',
      'agent.session.turn.output_text.done',
      'agent.session.turn.item.done',
      'agent.session.turn.item.added',
      'agent.session.requires_action',
      'agent.session.turn.item.done',
      'agent.session.turn.item.added',
      'agent.session.turn.item.done',
      'agent.session.turn.in_progress',
      'agent.session.in_progress',
      'agent.session.turn.item.added',
      'agent.session.turn.output_text.done',
      'agent.session.turn.item.done',
      'agent.session.turn.completed',
      'agent.session.idle',
    ]);
    expect((out[0] as any).turn).toMatchObject({ id: 'run_1', subagent_id: null, status: 'queued', session_id: 'sess_1' });
    expect((out[6] as any).item).toMatchObject({ phase: 'commentary', content: [{ type: 'output_text', text: 'Look' }] });
    expect((out[8] as any).session.required_actions).toEqual([{ type: 'function_call', turn_id: 'run_1', call_id: 'call_1', name: 'lookup_customer', arguments: '{"email":"a@b"}' }]);
    // The function call has the id the items lists give it: its assistant message and content part.
    expect((out[7] as any).item).toMatchObject({ id: 'fc_a_1', type: 'function_call', call_id: 'call_1', status: 'in_progress' });
    expect((out[9] as any).item).toMatchObject({ id: 'fc_a_1', type: 'function_call', status: 'completed' });
    expect((out[11] as any).item).toMatchObject({ type: 'function_call_output', call_id: 'call_1', output: '{"tier":"gold"}', status: 'completed' });
    expect((out[16] as any).item).toMatchObject({ phase: 'final_answer', status: 'completed', content: [{ type: 'output_text', text: 'Gold.' }] });
    expect((out[17] as any).turn).toMatchObject({ status: 'completed', completed_at: 1700000012, usage: { input_tokens: 10, output_tokens: 2, total_tokens: 12 } });
    expect((out[18] as any).session).toMatchObject({ status: 'idle', required_actions: [] });
    expect(new Set(out.map((e) => e.event_id)).size).toBe(out.length);
  });

  it('is a pure fold: the same events give the same output, also after a silent warm-up', () => {
    const a = new AgentSessionProjection(SESSION, (n) => n === 'lookup_customer');
    const full = turn.map((e) => JSON.stringify(a.apply(e)));
    const b = new AgentSessionProjection(SESSION, (n) => n === 'lookup_customer');
    for (const e of turn.slice(0, 6)) b.apply(e);
    expect(turn.slice(6).map((e) => JSON.stringify(b.apply(e)))).toEqual(full.slice(6));
  });

  it('a server tool waiting for approval is an approval_request action; cancel and failure are terminal events', () => {
    const p = new AgentSessionProjection(SESSION, () => false);
    const out = events([
      ['run.started', { status: 'running' }],
      ['tool.requested', { tool_call_id: 'call_2', tool_name: 'create_ticket', arguments: { subject: 'x' }, risk: 'approve' }],
      ['approval.requested', { approval_id: 'apr_1', tool_call_id: 'call_2', tool_name: 'create_ticket', arguments: { subject: 'x' }, risk: 'approve', expires_at: 'x' }],
      ['run.waiting', { status: 'waiting_for_approval', reason: 'approval_required' }],
      ['run.finished', { status: 'cancelled', final_message_id: null, termination_reason: null, error: null, usage: { input_tokens: 1, output_tokens: 1 } }],
    ]).flatMap((e) => p.apply(e));
    const waiting = out.find((e) => e.type === 'agent.session.requires_action') as any;
    expect(waiting.session.required_actions).toEqual([{ type: 'approval_request', turn_id: 'run_1', approval_id: 'apr_1', call_id: 'call_2', name: 'create_ticket', arguments: '{"subject":"x"}' }]);
    expect(out.slice(-2).map((e) => e.type)).toEqual(['agent.session.turn.cancelled', 'agent.session.idle']);
    const failed = new AgentSessionProjection(SESSION, () => false);
    const f = events([
      ['run.started', { status: 'running' }],
      ['run.finished', { status: 'failed', final_message_id: null, termination_reason: null, error: { code: 'model_error', message: 'boom' }, usage: {} }],
    ]).flatMap((e) => failed.apply(e));
    expect(f.slice(-2).map((e) => e.type)).toEqual(['agent.session.turn.failed', 'agent.session.idle']);
    expect((f[f.length - 2] as any).turn.error).toEqual({ code: 'server_error', message: 'model_error: boom' });
  });
});

describe('input events', () => {
  it('parses message, cancel, tool_result and approval_result; anything else names its param', () => {
    expect(
      parseInputEvents({
        events: [
          { type: 'agent.session.input.message', input: [{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }] },
          { type: 'agent.session.input.cancel' },
          { type: 'agent.session.input.tool_result', turn_id: 'run_1', call_id: 'call_1', success: true, output: '{"a":1}' },
          { type: 'agent.session.input.approval_result', approval_id: 'apr_1', decision: 'approve' },
        ],
      }),
    ).toEqual([
      { type: 'message', content: [{ type: 'text', text: 'hi' }] },
      { type: 'cancel' },
      { type: 'tool_result', turnId: 'run_1', callId: 'call_1', success: true, output: '{"a":1}', error: null },
      { type: 'approval_result', approvalId: 'apr_1', decision: 'approve', reason: null },
    ]);
    const bad = (body: unknown) => {
      try {
        parseInputEvents(body);
      } catch (e) {
        return e instanceof InputProblem ? e.param : 'other';
      }
      return 'none';
    };
    expect(bad({ events: [] })).toBe('events');
    expect(bad({ events: [{ type: 'agent.session.input.computer_use_approval_request_result' }] })).toBe('events[0].type');
    expect(bad({ events: [{ type: 'agent.session.input.message', input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] }] })).toBe('events[0].input[0].content[0].type');
    expect(bad({ events: [{ type: 'agent.session.input.tool_result', turn_id: 'run_1', call_id: 'c' }] })).toBe('events[0].success');
  });

  it("subagents (CONTRACT 16): a subagent's stream names its turns' subagent_id; calls naming a subagent known from an earlier turn by name resolve to its id; closed carries what is known", () => {
    const known = {
      subagent: { id: 'sess_k', closed_at: null, instructions: [{ type: 'output_text' as const, text: 'task' }], name: 'k', object: 'agent.session.subagent' as const, opened_at: 1, parent_agent_id: 'sess_1', session_id: 'sess_root', status: 'active' as const },
      runId: 'run_0',
    };
    const p = new AgentSessionProjection(SESSION, () => false, { rootSessionId: 'sess_root', subagentId: 'sess_1', sender: 'sess_1', known: [known] });
    const out = events([
      ['run.started', { status: 'running' }],
      ['message.started', { message_id: 'msg_a', role: 'assistant' }],
      ['message.completed', { message_id: 'msg_a', content: [{ type: 'tool_call', tool_call_id: 'call_1', tool_name: 'close_subagent', arguments: { subagent_id: 'k' } }] }],
      ['tool.requested', { tool_call_id: 'call_1', tool_name: 'close_subagent', arguments: { subagent_id: 'k' }, risk: 'auto' }],
      ['subagent.closed', { subagent_id: 'sess_k' }],
      ['tool.completed', { tool_call_id: 'call_1', tool_name: 'close_subagent', result: { closed: true }, duration_ms: 1 }],
    ]).flatMap((e) => p.apply(e));
    expect((out[0] as any).turn.subagent_id).toBe('sess_1');
    const done = out.filter((e) => e.type === 'agent.session.turn.item.done').map((e) => (e as any).item);
    expect(done[done.length - 1]).toEqual({ id: 'fc_a_0', type: 'close_subagent_call', recipient_agent_id: 'sess_k', sender_agent_id: 'sess_1', status: 'completed', turn_id: 'run_1' });
    expect(done.some((i: any) => i.type === 'function_call_output')).toBe(false);
    const closed = out.find((e) => e.type === 'agent.session.subagent.closed') as any;
    expect(closed.subagent).toMatchObject({ id: 'sess_k', name: 'k', instructions: [{ type: 'output_text', text: 'task' }], status: 'closed', closed_at: expect.any(Number), session_id: 'sess_root' });
  });
});
