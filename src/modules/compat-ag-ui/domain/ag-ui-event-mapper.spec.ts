import type { PublicRunEvent } from '../../events/domain/run-event';
import { AgUiEventMapper } from './ag-ui-event-mapper';

let seq = 0;
const ev = (type: string, data: Record<string, unknown>): PublicRunEvent =>
  ({ event_id: `evt_${++seq}`, run_id: 'run_1', session_id: 'sess_1', sequence: seq, session_sequence: seq, type, occurred_at: new Date(0).toISOString(), data }) as PublicRunEvent;

const types = (m: AgUiEventMapper, events: PublicRunEvent[]) => [...m.start(), ...events.flatMap((e) => m.map(e))].map((e) => e.type);

describe('AgUiEventMapper', () => {
  it('a turn with text and a tool call: step around text and the call, result after, success at the end', () => {
    const m = new AgUiEventMapper('t', 'r', () => 1);
    expect(
      types(m, [
        ev('run.started', { status: 'running' }),
        ev('message.started', { message_id: 'msg_1', role: 'assistant' }),
        ev('message.delta', { message_id: 'msg_1', content_index: 0, delta: 'Hi' }),
        ev('message.completed', { message_id: 'msg_1', content: [{ type: 'text', text: 'Hi' }] }),
        ev('usage', {}),
        ev('tool.requested', { tool_call_id: 'c1', tool_name: 'get_time', arguments: {}, risk: 'auto' }),
        ev('tool.started', { tool_call_id: 'c1', tool_name: 'get_time', attempt: 1 }),
        ev('tool.completed', { tool_call_id: 'c1', tool_name: 'get_time', result: { now: 1 }, duration_ms: 1 }),
        ev('message.started', { message_id: 'msg_2', role: 'assistant' }),
        ev('message.completed', { message_id: 'msg_2', content: [{ type: 'text', text: 'Done' }] }),
        ev('run.finished', { status: 'completed' }),
        ev('usage', {}),
      ]),
    ).toEqual([
      'RUN_STARTED',
      'STEP_STARTED',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'STEP_FINISHED',
      'TOOL_CALL_RESULT',
      'STEP_STARTED',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'STEP_FINISHED',
      'RUN_FINISHED',
    ]);
    expect(m.done).toBe(true);
  });

  it('an approval ends the AG-UI run with an interrupt outcome', () => {
    const m = new AgUiEventMapper('t', 'r');
    const out = [
      ...m.start(),
      ...[
        ev('message.started', { message_id: 'msg_1', role: 'assistant' }),
        ev('message.completed', { message_id: 'msg_1', content: [] }),
        ev('tool.requested', { tool_call_id: 'c1', tool_name: 'create_ticket', arguments: {}, risk: 'approve' }),
        ev('approval.requested', { approval_id: 'apr_1', tool_call_id: 'c1', tool_name: 'create_ticket', arguments: {}, risk: 'approve', expires_at: '2030-01-01T00:00:00.000Z' }),
        ev('run.waiting', { status: 'waiting_for_approval', reason: 'approval_required' }),
      ].flatMap((e) => m.map(e)),
    ];
    expect(out[out.length - 1]).toMatchObject({
      type: 'RUN_FINISHED',
      outcome: { type: 'interrupt', interrupts: [{ id: 'apr_1', reason: 'tool_approval', toolCallId: 'c1', expiresAt: '2030-01-01T00:00:00.000Z' }] },
    });
    expect(out.filter((e) => e.type === 'STEP_FINISHED')).toHaveLength(1);
    expect(m.map(ev('run.resumed', { status: 'running' }))).toEqual([]);
  });

  it('waiting for a client tool: success with the unanswered calls; failures are RUN_ERROR with the code; cancel closes what is open', () => {
    const a = new AgUiEventMapper('t', 'r');
    a.start();
    a.map(ev('tool.requested', { tool_call_id: 'c9', tool_name: 'lookup_customer', arguments: { redacted: true }, risk: 'auto' }));
    expect(a.map(ev('run.waiting', { status: 'waiting_for_tool', reason: 'client_tool' }))).toEqual([expect.objectContaining({ type: 'RUN_FINISHED', outcome: { type: 'success', pendingToolCallIds: ['c9'] } })]);

    const b = new AgUiEventMapper('t', 'r');
    b.start();
    expect(b.map(ev('run.finished', { status: 'failed', error: { code: 'model_timeout', message: 'slow' } }))).toEqual([expect.objectContaining({ type: 'RUN_ERROR', code: 'model_timeout', message: 'slow' })]);

    const c = new AgUiEventMapper('t', 'r');
    expect(
      types(c, [
        ev('message.started', { message_id: 'msg_1', role: 'assistant' }),
        ev('message.delta', { message_id: 'msg_1', content_index: 0, delta: 'Hel' }),
        ev('run.finished', { status: 'cancelled' }),
      ]),
    ).toEqual(['RUN_STARTED', 'STEP_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'STEP_FINISHED', 'RUN_FINISHED']);
  });
});
