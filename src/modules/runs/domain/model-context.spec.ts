import { emptyLoopState } from './run.aggregate';
import { contextOf } from './model-context';

type M = { id: string; sequence: number; runId: string | null; role: string; status: string };
const m = (id: string, sequence: number, runId: string | null, role: string, status = 'completed'): M => ({ id, sequence, runId, role, status });

describe('contextOf: the model context of a run from its session history', () => {
  const history: M[] = [
    m('u0', 1, 'run_0', 'user'),
    m('a0', 2, 'run_0', 'assistant'),
    m('u1', 3, 'run_1', 'user'), // the run's input
    m('a1', 4, 'run_1', 'assistant'), // asked for a tool
    m('s1', 5, 'run_1', 'user'), // steered while the tool ran
    m('t1', 6, 'run_1', 'tool'),
    m('a2', 7, 'run_1', 'assistant'), // the turn that took s1
    m('s2', 8, 'run_1', 'user'), // steered, not taken yet
    m('u2', 9, 'run_2', 'user'), // a run queued behind
    m('a3', 10, 'run_1', 'assistant', 'failed'),
  ];

  it('keeps the history up to the input and what the run added; untaken steers and later runs stay out', () => {
    const run = { id: 'run_1', userMessageId: 'u1', state: emptyLoopState() };
    expect(contextOf(history, run).map((x) => x.id)).toEqual(['u0', 'a0', 'u1', 'a1', 't1', 'a2']);
  });

  it('puts a taken steer right before the message of the turn that took it (after the tool result), or last for the turn now beginning', () => {
    const state = { ...emptyLoopState(), inputs: [{ message_id: 's1', before: 'a2' }, { message_id: 's2', before: 'msg_now' }] };
    expect(contextOf(history, { id: 'run_1', userMessageId: 'u1', state }).map((x) => x.id)).toEqual(['u0', 'a0', 'u1', 'a1', 't1', 's1', 'a2', 's2']);
  });
});
