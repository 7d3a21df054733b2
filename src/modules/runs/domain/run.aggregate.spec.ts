import { DomainError } from '../../../common/errors/domain-error';
import { newTestRun, testEnv, turnEnded } from '../../../../test/helpers/run-fixture';
import { DEFAULT_LIMITS, Run } from './run.aggregate';
import { canMove, RUN_STATUSES, TERMINAL_STATUSES } from './run-status';

const newRun = (): Run => newTestRun();
const T1 = Date.parse('2026-01-01T00:00:01Z');
const CLIENT_TOOL = { lookup_customer: { risk: 'auto' as const, executor: 'client' as const, idempotent: false } };

/** The public events recorded since the last save, which the save then takes. */
function saved(r: Run): string[] {
  const types = r.unsavedEvents.map((e) => e.type);
  r.markSaved();
  return types;
}
const tick = { type: 'tick' } as const;
/** Decisions at T1, a second after the run was queued. */
const env = (o: Parameters<typeof testEnv>[0] = {}) => testEnv({ now: T1, ...o });
const cancel = { type: 'cancel_requested', requested_by: 'user' } as const;

describe('Run aggregate: decisions applied, their public events recorded, committed once', () => {
  it('terminal statuses allow no move at all', () => {
    for (const from of TERMINAL_STATUSES) for (const to of RUN_STATUSES) expect(canMove(from, to)).toBe(false);
  });

  it.each([
    ['queued', 'running', true],
    ['queued', 'completed', false],
    ['running', 'queued', false],
    ['running', 'waiting_for_approval', true],
    ['waiting_for_tool', 'running', true],
    ['cancelling', 'completed', false],
    ['cancelling', 'cancelled', true],
  ] as const)('%s -> %s legal: %s', (from, to, legal) => {
    expect(canMove(from, to)).toBe(legal);
  });

  it('a decision retracted to its mark leaves the run as before it (state, unsaved events, version); a mark does not outlive a commit', () => {
    const r = newRun();
    r.decide(tick, env());
    const before = r.mark();
    const state = r.snapshot();
    const unsaved = r.unsavedEvents.length;
    r.decide(cancel, env());
    expect(r.status).not.toBe(state.status);
    r.retract(before);
    expect(r.snapshot()).toEqual(state);
    expect(r.unsavedEvents).toHaveLength(unsaved);
    saved(r);
    const m = r.mark();
    r.decide(cancel, env());
    saved(r);
    expect(() => r.retract(m)).toThrow('a run cannot retract past a commit');
  });

  it('given a queued run, when ticked, then run.started is recorded, the status is running and the deadline runs from then', () => {
    const r = newRun();
    r.decide(tick, env());
    expect(r.status).toBe('running');
    expect(saved(r)).toEqual(['run.started']);
    expect(r.deadline()).toBe(T1 + DEFAULT_LIMITS.timeout_ms);
  });

  it('given a queued run, when cancelled, then it ends at once with usage and run.finished; a second cancel records nothing', () => {
    const r = newRun();
    expect(r.decide(cancel, env()).events).not.toHaveLength(0);
    expect(r.status).toBe('cancelled');
    expect(saved(r)).toEqual(['run.cancel_requested', 'usage', 'run.finished']);
    expect(r.decide(cancel, env()).events).toEqual([]);
    expect(r.unsavedEvents).toEqual([]);
    expect(r.hasChanges).toBe(false);
  });

  it('given a running run, when cancelled, then it becomes cancelling and the next decision finishes it as cancelled', () => {
    const r = newRun();
    r.decide(tick, env());
    r.markSaved();
    r.decide(cancel, env());
    expect(r.status).toBe('cancelling');
    expect(saved(r)).toEqual(['run.cancel_requested']);
    r.decide(tick, env());
    expect(r.status).toBe('cancelled');
    expect(saved(r)).toEqual(['usage', 'run.finished']);
  });

  it('given a finished run, cancel is run_finished and nothing moves it', () => {
    const r = newRun();
    r.decide(tick, env());
    r.decide(tick, env({ ids: ['msg_9'] }));
    r.decide(turnEnded('msg_9', { text: 'done' }), env());
    expect(r.status).toBe('completed');
    expect(r.snapshot().finalMessageId).toBe('msg_9');
    expect(() => r.decide(cancel, env())).toThrow(DomainError);
    expect(r.decide(tick, env()).events).toEqual([]);
  });

  it('a turn that used tokens is unsaved spend until the save takes it; a turn without tokens is none', () => {
    const r = newRun();
    r.decide(tick, env());
    r.decide(tick, env({ ids: ['msg_1'] }));
    const usage = { input_tokens: 120, output_tokens: 30, cached_input_tokens: 20, cost: '0.0042' };
    r.decide({ ...turnEnded('msg_1', { text: 'done' }), usage }, env());
    expect(r.unsavedSpend).toEqual([{ message_id: 'msg_1', usage }]);
    r.markSaved();
    expect(r.unsavedSpend).toEqual([]);
    const free = newRun();
    free.decide(tick, env());
    free.decide(tick, env({ ids: ['msg_2'] }));
    free.decide(turnEnded('msg_2', { text: 'done' }), env());
    expect(free.status).toBe('completed');
    expect(free.unsavedSpend).toEqual([]);
  });

  it('records the termination reason only with terminated', () => {
    const r = newTestRun({ limits: { max_steps: 1 } });
    r.decide(tick, env());
    r.decide(tick, env({ ids: ['msg_2'] }));
    r.decide(turnEnded('msg_2', { toolCalls: [{ id: 'c1', name: 'lookup_customer' }] }), env({ tools: CLIENT_TOOL }));
    r.markSaved();
    // The client's output resumes it: its next step would be the second, over max_steps.
    r.decide(tick, env({ tools: CLIENT_TOOL }));
    r.decide({ type: 'client_tool_outputs', outputs: [{ tool_call_id: 'c1', output: 1 }] }, env());
    r.decide(tick, env());
    r.decide(tick, env());
    const finished = r.unsavedEvents.find((e) => e.type === 'run.finished')!;
    expect(finished.data).toMatchObject({ status: 'terminated', termination_reason: 'max_steps' });
  });

  it('waits for a client tool with run.waiting and resumes with run.resumed once its output arrives', () => {
    const r = newRun();
    r.decide(tick, env());
    r.decide(tick, env({ ids: ['msg_2'] }));
    r.decide(turnEnded('msg_2', { toolCalls: [{ id: 'c1', name: 'lookup_customer' }] }), env({ tools: CLIENT_TOOL }));
    r.decide(tick, env({ tools: CLIENT_TOOL }));
    expect(r.status).toBe('waiting_for_tool');
    r.decide({ type: 'client_tool_outputs', outputs: [{ tool_call_id: 'c1', output: { name: 'x' } }] }, env());
    expect(r.status).toBe('running');
    expect(saved(r)).toEqual(['run.started', 'message.started', 'message.completed', 'tool.requested', 'tool.started', 'run.waiting', 'tool.completed', 'run.resumed']);
  });

  it('bumps the version once per save, whatever the number of changes', () => {
    const r = newRun();
    r.markSaved();
    r.decide(tick, env());
    r.decide(tick, env({ ids: ['msg_2'] }));
    r.streamDelta('msg_2', 'x');
    expect(r.version).toBe(2);
    expect(r.expectedVersion).toBe(1);
    r.markSaved();
    r.streamDelta('msg_2', 'y');
    expect(r.version).toBe(3);
  });

  it('keeps the events recorded while a save was in flight: markSaved drops only those the save took', () => {
    const r = newRun();
    r.decide(tick, env());
    r.decide(tick, env({ ids: ['msg_2'] }));
    const taken = [...r.unsavedEvents];
    expect(taken.map((e) => e.type)).toEqual(['run.started', 'message.started']);
    r.streamDelta('msg_2', 'x'); // during the write
    r.markSaved(taken.length);
    expect(r.unsavedEvents.map((e) => e.type)).toEqual(['message.delta']);
    expect(r.hasChanges).toBe(true);
  });

  it('records the statuses it moved into since the last save (for integration events); markSaved drops only those the save took', () => {
    const r = newRun();
    r.markSaved();
    expect(r.unsavedStatusChanges).toEqual([]);
    r.decide(tick, env());
    r.decide(tick, env({ ids: ['msg_2'] }));
    r.streamDelta('msg_2', 'x'); // no move
    r.decide(turnEnded('msg_2', { toolCalls: [{ id: 'c1', name: 'lookup_customer' }] }), env({ tools: CLIENT_TOOL }));
    r.decide(tick, env({ tools: CLIENT_TOOL }));
    expect(r.unsavedStatusChanges).toEqual(['running', 'waiting_for_tool']);
    const taken = r.unsavedStatusChanges.length;
    r.decide({ type: 'client_tool_outputs', outputs: [{ tool_call_id: 'c1', output: 1 }] }, env()); // during the write
    r.markSaved(r.unsavedEvents.length, 0, taken);
    expect(r.unsavedStatusChanges).toEqual(['running']);
    r.decide(tick, env()); // the cleared turn
    r.decide(tick, env({ ids: ['msg_3'] }));
    r.decide(turnEnded('msg_3', { text: 'done' }), env());
    expect(r.unsavedStatusChanges).toEqual(['running', 'completed']);
    r.markSaved();
    expect(r.unsavedStatusChanges).toEqual([]);
  });

  it('reading the unsaved events does not take them: they stay pending until markSaved (a failed write loses none)', () => {
    const r = newRun();
    r.decide(tick, env());
    expect([...r.unsavedEvents].map((e) => e.type)).toEqual(['run.started']);
    expect(r.unsavedEvents.map((e) => e.type)).toEqual(['run.started']);
    expect(r.hasChanges).toBe(true);
    r.markSaved();
    expect(r.unsavedEvents).toEqual([]);
    expect(r.hasChanges).toBe(false);
  });

  it('a restored run decides from its stored state and commits on its version', () => {
    const r = newRun();
    r.decide(tick, env());
    r.markSaved();
    const again = Run.restore(r.snapshot());
    expect([again.status, again.version, again.expectedVersion]).toEqual(['running', 1, 1]);
    again.decide(cancel, env());
    expect([again.status, again.version, again.expectedVersion]).toEqual(['cancelling', 2, 1]);
  });
});
