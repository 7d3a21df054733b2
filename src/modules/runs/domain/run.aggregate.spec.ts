import { DomainError } from '../../../common/errors/domain-error';
import { newTestRun } from '../../../../test/helpers/run-fixture';
import { DEFAULT_LIMITS, Run } from './run.aggregate';
import { canMove, RUN_STATUSES, TERMINAL_STATUSES } from './run-status';

const newRun = (): Run => newTestRun();

const types = (r: Run) => r.pullEvents().map((e) => e.type);

describe('Run aggregate', () => {
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

  it('given a queued run, when started, then run.started is recorded and the status is running', () => {
    const r = newRun();
    r.start(new Date('2026-01-01T00:00:01Z'));
    expect(r.status).toBe('running');
    expect(types(r)).toEqual(['run.started']);
    expect(r.deadline()).toBe(new Date('2026-01-01T00:00:01Z').getTime() + DEFAULT_LIMITS.timeout_ms);
  });

  it('given a queued run, when cancelled, then it ends at once with usage and run.finished', () => {
    const r = newRun();
    expect(r.requestCancel('user', new Date())).toBe(true);
    expect(r.status).toBe('cancelled');
    expect(types(r)).toEqual(['run.cancel_requested', 'usage', 'run.finished']);
    expect(r.requestCancel('user', new Date())).toBe(false);
    expect(r.pullEvents()).toEqual([]);
  });

  it('given a running run, when cancelled, then it becomes cancelling and finishes later as cancelled', () => {
    const r = newRun();
    r.start(new Date());
    r.pullEvents();
    r.requestCancel('user', new Date());
    expect(r.status).toBe('cancelling');
    expect(types(r)).toEqual(['run.cancel_requested']);
    r.finish('cancelled', {}, new Date());
    expect(r.status).toBe('cancelled');
    expect(types(r)).toEqual(['usage', 'run.finished']);
  });

  it('given a finished run, cancel is run_finished and nothing moves it', () => {
    const r = newRun();
    r.start(new Date());
    r.finish('completed', { finalMessageId: 'msg_9' }, new Date());
    expect(() => r.requestCancel('user', new Date())).toThrow(DomainError);
    expect(() => r.resume()).toThrow(DomainError);
    expect(() => r.finish('failed', {}, new Date())).toThrow(DomainError);
  });

  it('records the termination reason only with terminated', () => {
    const r = newRun();
    r.start(new Date());
    r.pullEvents();
    r.finish('terminated', { reason: 'max_steps' }, new Date());
    const finished = r.pullEvents().find((e) => e.type === 'run.finished')!;
    expect(finished.data).toMatchObject({ status: 'terminated', termination_reason: 'max_steps' });
  });

  it('waits and resumes with run.waiting / run.resumed and drops the lease while waiting', () => {
    const r = newRun();
    r.start(new Date());
    r.lease('node', new Date(Date.now() + 1000));
    r.wait('waiting_for_approval', 'approval_required');
    expect(r.snapshot().leaseOwner).toBeNull();
    r.resume();
    expect(types(r)).toEqual(['run.started', 'run.waiting', 'run.resumed']);
  });

  it('bumps the version once per save, whatever the number of changes', () => {
    const r = newRun();
    r.markSaved();
    r.start(new Date());
    r.apply([{ type: 'turn_begun', message_id: 'msg_2' }]);
    r.streamDelta('msg_2', 'x');
    expect(r.version).toBe(2);
    expect(r.expectedVersion).toBe(1);
    r.markSaved();
    r.streamDelta('msg_2', 'y');
    expect(r.version).toBe(3);
  });

  it('keeps the events recorded while a save was in flight: markSaved drops only those the save took', () => {
    const r = newRun();
    r.start(new Date('2026-01-01T00:00:01Z'));
    r.apply([{ type: 'turn_begun', message_id: 'msg_2' }]);
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
    r.start(new Date('2026-01-01T00:00:01Z'));
    r.streamDelta('msg_2', 'x'); // no move
    r.wait('waiting_for_tool', 'client_tool');
    expect(r.unsavedStatusChanges).toEqual(['running', 'waiting_for_tool']);
    const taken = r.unsavedStatusChanges.length;
    r.resume(); // during the write
    r.markSaved(r.unsavedEvents.length, 0, taken);
    expect(r.unsavedStatusChanges).toEqual(['running']);
    r.finish('completed', {}, new Date('2026-01-01T00:00:02Z'));
    expect(r.unsavedStatusChanges).toEqual(['running', 'completed']);
    r.markSaved();
    expect(r.unsavedStatusChanges).toEqual([]);
  });

  it('reading the unsaved events does not take them: they stay pending until markSaved (a failed write loses none)', () => {
    const r = newRun();
    r.start(new Date('2026-01-01T00:00:01Z'));
    expect([...r.unsavedEvents].map((e) => e.type)).toEqual(['run.started']);
    expect(r.unsavedEvents.map((e) => e.type)).toEqual(['run.started']);
    expect(r.hasChanges).toBe(true);
    r.markSaved();
    expect(r.unsavedEvents).toEqual([]);
    expect(r.hasChanges).toBe(false);
  });
});
