import { verifyEvents } from '@ag-ui/client';
import { EventSchema } from '@ag-ui/core/schemas';
import { from } from 'rxjs';
import type { PublicRunEvent } from '../../events/domain/run-event';
import type { AgUiEvent } from './ag-ui-event-mapper';
import { AgUiRunStream } from './ag-ui-run-stream';

let seq = 0;
const ev = (runId: string, type: string, data: Record<string, unknown>): PublicRunEvent =>
  ({ event_id: `evt_${++seq}`, run_id: runId, session_id: 'sess_1', sequence: seq, session_sequence: seq, type, occurred_at: new Date(0).toISOString(), data }) as PublicRunEvent;

/** @ag-ui/client's verifier and @ag-ui/core's schemas over a whole stream: the events that passed. */
async function verified(events: AgUiEvent[]): Promise<number> {
  for (const e of events) EventSchema.parse(e);
  return new Promise<number>((resolve, reject) => {
    let n = 0;
    verifyEvents()(from(events) as never).subscribe({ next: () => n++, error: reject, complete: () => resolve(n) });
  });
}

const parentTurn = (calls: Array<[string, string, Record<string, unknown>]>) => [
  ev('run_p', 'message.started', { message_id: `msg_p${seq}`, role: 'assistant' }),
  ev('run_p', 'message.completed', { message_id: `msg_p${seq - 1}`, content: calls.map(([id, name, args]) => ({ type: 'tool_call', tool_call_id: id, tool_name: name, arguments: args })) }),
  ...calls.map(([id, name, args]) => ev('run_p', 'tool.requested', { tool_call_id: id, tool_name: name, arguments: args })),
];
const childRun = (runId: string, text: string, status = 'completed') => [
  ev(runId, 'run.started', {}),
  ev(runId, 'message.started', { message_id: `msg_${runId}`, role: 'assistant' }),
  ev(runId, 'message.delta', { message_id: `msg_${runId}`, delta: text }),
  ev(runId, 'message.completed', { message_id: `msg_${runId}`, content: [{ type: 'text', text }] }),
  ev(runId, 'run.finished', status === 'completed' ? { status } : { status, error: { code: 'model_refusal', message: 'no' } }),
];

describe('AgUiRunStream (a run and its subagents as one AG-UI run)', () => {
  it("holds the parent's events after subagent.completed until the subagent's own end is mapped; the verifier accepts the stream", async () => {
    const followed: string[] = [];
    const s = new AgUiRunStream('t', 'r', (id) => followed.push(id), () => 1);
    const out: AgUiEvent[] = [...s.start()];
    out.push(...s.onRun([ev('run_p', 'run.started', {}), ...parentTurn([['c1', 'create_subagent', { name: 'a' }], ['c2', 'create_subagent', { name: 'b' }]])]));
    out.push(...s.onRun([ev('run_p', 'subagent.created', { subagent_id: 'sess_a', name: 'a', run_id: 'run_a', tool_call_id: 'c1' })]));
    out.push(...s.onRun([ev('run_p', 'subagent.created', { subagent_id: 'sess_b', name: 'b', run_id: 'run_b', tool_call_id: 'c2' })]));
    expect(followed).toEqual(['run_a', 'run_b']);
    // The parent learns both ends before the subagents' own streams deliver them.
    out.push(
      ...s.onRun([
        ev('run_p', 'subagent.completed', { subagent_id: 'sess_a', run_id: 'run_a', status: 'completed' }),
        ev('run_p', 'subagent.completed', { subagent_id: 'sess_b', run_id: 'run_b', status: 'failed' }),
        ev('run_p', 'message.started', { message_id: 'msg_final', role: 'assistant' }),
        ev('run_p', 'message.completed', { message_id: 'msg_final', content: [{ type: 'text', text: 'done' }] }),
        ev('run_p', 'run.finished', { status: 'completed' }),
      ]),
    );
    expect(s.waiting).toBe(true);
    expect(s.done).toBe(false);
    out.push(...s.onSubagentRun('run_a', childRun('run_a', 'alpha')));
    expect(s.done).toBe(false); // still waiting for b's own end
    out.push(...s.onSubagentRun('run_b', childRun('run_b', 'beta', 'failed')));
    expect(s.done).toBe(true);
    const types = out.map((e) => `${e.type}${e.subagentRunId ? `@${String(e.subagentRunId)}` : ''}`);
    expect(types.indexOf('SUBAGENT_FINISHED@run_a')).toBeLessThan(types.indexOf('SUBAGENT_ERROR@run_b'));
    expect(types.indexOf('SUBAGENT_ERROR@run_b')).toBeLessThan(types.lastIndexOf('TEXT_MESSAGE_START'));
    expect(out.find((e) => e.type === 'SUBAGENT_STARTED')).toMatchObject({ subagentRunId: 'run_a', name: 'a', parentToolCallId: 'c1' });
    expect(out.find((e) => e.type === 'SUBAGENT_FINISHED')).toMatchObject({ outcome: { type: 'success' }, result: 'alpha' });
    expect(out.find((e) => e.type === 'SUBAGENT_ERROR')).toMatchObject({ code: 'model_refusal', message: 'no' });
    expect(out.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT').map((e) => [e.subagentRunId, e.delta])).toEqual([
      ['run_a', 'alpha'],
      ['run_b', 'beta'],
      [undefined, 'done'],
    ]);
    expect(out[out.length - 1]).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
    expect(await verified(out)).toBe(out.length);
  });

  it('release() ends an awaited subagent as its parent learnt it; a run that ends first suspends the others; nested subagents name their parent', async () => {
    const s = new AgUiRunStream('t', 'r', () => undefined, () => 1);
    const out: AgUiEvent[] = [...s.start()];
    out.push(...s.onRun([...parentTurn([['c1', 'create_subagent', {}], ['c2', 'create_subagent', {}]])]));
    out.push(...s.onRun([ev('run_p', 'subagent.created', { subagent_id: 'sess_a', name: 'a', run_id: 'run_a', tool_call_id: 'c1' })]));
    out.push(...s.onRun([ev('run_p', 'subagent.created', { subagent_id: 'sess_b', name: 'b', run_id: 'run_b', tool_call_id: 'c2' })]));
    // a spawns its own subagent, and its text is still open.
    out.push(
      ...s.onSubagentRun('run_a', [
        ev('run_a', 'message.started', { message_id: 'msg_a', role: 'assistant' }),
        ev('run_a', 'message.delta', { message_id: 'msg_a', delta: 'half' }),
        ev('run_a', 'subagent.created', { subagent_id: 'sess_c', name: 'c', run_id: 'run_c', tool_call_id: 'ca' }),
      ]),
    );
    expect(out.find((e) => e.type === 'SUBAGENT_STARTED' && e.subagentRunId === 'run_c')).toMatchObject({ parentSubagentRunId: 'run_a', name: 'c' });
    out.push(...s.onRun([ev('run_p', 'subagent.completed', { subagent_id: 'sess_a', run_id: 'run_a', status: 'cancelled' }), ev('run_p', 'run.finished', { status: 'completed' })]));
    expect(s.waiting).toBe(true);
    out.push(...s.release());
    expect(s.done).toBe(true);
    expect(out.find((e) => e.type === 'SUBAGENT_ERROR')).toMatchObject({ subagentRunId: 'run_a', code: 'run_cancelled' });
    expect(out.filter((e) => e.type === 'SUBAGENT_FINISHED').map((e) => [e.subagentRunId, (e.outcome as { type: string }).type])).toEqual([
      ['run_b', 'suspended'],
      ['run_c', 'suspended'],
    ]);
    // Anything later is dropped.
    expect(s.onSubagentRun('run_b', childRun('run_b', 'late'))).toEqual([]);
    expect(await verified(out)).toBe(out.length);
  });

  it("a parent waiting for its subagents does not end the AG-UI run; send_subagent_input's new run is a new invocation", async () => {
    const s = new AgUiRunStream('t', 'r', () => undefined, () => 1);
    const out: AgUiEvent[] = [...s.start()];
    out.push(...s.onRun([...parentTurn([['c1', 'create_subagent', {}]]), ev('run_p', 'subagent.created', { subagent_id: 'sess_a', name: 'a', run_id: 'run_a', tool_call_id: 'c1' })]));
    out.push(...s.onSubagentRun('run_a', childRun('run_a', 'one')));
    out.push(...s.onRun([ev('run_p', 'run.waiting', { status: 'waiting_for_subagents' })]));
    expect(s.done).toBe(false);
    out.push(...s.onRun([...parentTurn([['c2', 'send_subagent_input', { subagent_id: 'a', input: 'more' }]])]));
    out.push(...s.onRun([ev('run_p', 'tool.completed', { tool_call_id: 'c2', tool_name: 'send_subagent_input', result: { subagent_id: 'sess_a', run_id: 'run_a2' } })]));
    expect(out.filter((e) => e.type === 'SUBAGENT_STARTED').map((e) => [e.subagentRunId, e.name])).toEqual([
      ['run_a', 'a'],
      ['run_a2', 'a'],
    ]);
    out.push(...s.onSubagentRun('run_a2', childRun('run_a2', 'two')));
    out.push(...s.onRun([ev('run_p', 'run.finished', { status: 'completed' })]));
    expect(s.done).toBe(true);
    expect(await verified(out)).toBe(out.length);
  });
});
