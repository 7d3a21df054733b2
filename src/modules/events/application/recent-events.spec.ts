import { StoredRunEvent } from '../domain/run-event';
import { jsonbOrdered } from '../../../common/database/jsonb';
import { RECENT_PER_STREAM, RECENT_TOTAL, RecentEvents } from './recent-events';

function ev(runId: string, sequence: number, sessionSequence = sequence, sessionId = 'sess_1'): StoredRunEvent {
  return { id: `evt_${runId}_${sequence}`, tenantId: 't', subjectId: 's', sessionId, runId, sequence, sessionSequence, type: 'message.delta', occurredAt: new Date(0), data: {} };
}
const seqs = (events: StoredRunEvent[] | null) => events?.map((e) => e.sequence) ?? null;
const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);

describe('RecentEvents', () => {
  it('keeps only watched streams and serves contiguous events right after the cursor', () => {
    const r = new RecentEvents();
    r.add([ev('run_1', 1), ev('run_1', 2)]);
    expect(r.read('run', 'run_1', 0, 10)).toBeNull(); // not watched: nothing kept
    r.watch('run', 'run_1');
    expect(r.wants('run_1', 'sess_x')).toBe(true);
    expect(r.wants('run_2', 'sess_x')).toBe(false);
    r.add([ev('run_1', 3), ev('run_1', 4), ev('run_1', 5)]);
    expect(seqs(r.read('run', 'run_1', 2, 10))).toEqual([3, 4, 5]);
    expect(seqs(r.read('run', 'run_1', 3, 1))).toEqual([4]);
    expect(r.read('run', 'run_1', 1, 10)).toBeNull(); // 2 is not here: read the database
    expect(r.read('run', 'run_1', 5, 10)).toBeNull(); // nothing after 5 here
    r.unwatch('run', 'run_1');
    expect(r.read('run', 'run_1', 2, 10)).toBeNull();
    expect(r.stats()).toEqual({ streams: 0, events: 0 });
  });

  it('orders commits of one session seen out of order, and never bridges a gap', () => {
    const r = new RecentEvents();
    r.watch('session', 'sess_1');
    r.add([ev('run_a', 1, 1), ev('run_a', 2, 2)]);
    r.add([ev('run_b', 1, 5), ev('run_b', 2, 6)]); // 3-4 (another run) not seen yet
    r.add([ev('run_c', 1, 3), ev('run_c', 2, 4)]); // arrives late
    const page = r.read('session', 'sess_1', 4, 10);
    expect(page?.map((e) => e.sessionSequence)).toEqual([5, 6]);
    expect(r.read('session', 'sess_1', 2, 10)?.map((e) => e.sessionSequence)).toEqual([3, 4, 5, 6]);
    // A gap (written by another node) restarts the stream from the new events.
    r.add([ev('run_d', 1, 9)]);
    expect(r.read('session', 'sess_1', 6, 10)).toBeNull();
    expect(r.read('session', 'sess_1', 8, 10)?.map((e) => e.sessionSequence)).toEqual([9]);
  });

  it('is bounded per stream and in all', () => {
    const r = new RecentEvents();
    r.watch('run', 'run_1');
    r.add(range(1, RECENT_PER_STREAM + 10).map((i) => ev('run_1', i)));
    expect(r.stats().events).toBe(RECENT_PER_STREAM);
    expect(r.read('run', 'run_1', 0, 10)).toBeNull(); // the oldest were dropped
    expect(seqs(r.read('run', 'run_1', RECENT_PER_STREAM + 8, 10))).toEqual([RECENT_PER_STREAM + 9, RECENT_PER_STREAM + 10]);
    const streams = Math.ceil(RECENT_TOTAL / 100) + 5;
    for (let i = 0; i < streams; i++) {
      r.watch('run', `run_x${i}`);
      r.add(range(1, 100).map((k) => ev(`run_x${i}`, k)));
    }
    expect(r.stats().events).toBeLessThanOrEqual(RECENT_TOTAL);
    // The least recently written went first.
    expect(r.read('run', 'run_1', RECENT_PER_STREAM + 8, 10)).toBeNull();
    expect(seqs(r.read('run', `run_x${streams - 1}`, 98, 10))).toEqual([99, 100]);
  });

  it('tells its listener about kept commits only', () => {
    const r = new RecentEvents();
    const seen: number[] = [];
    r.onAdded((events) => seen.push(...events.map((e) => e.sequence)));
    r.add([ev('run_1', 1)]);
    r.watch('session', 'sess_1');
    r.add([ev('run_1', 2)]);
    expect(seen).toEqual([2]);
  });

  it('orders object keys the way jsonb returns them (length, then bytes), recursively', () => {
    const v = jsonbOrdered({ zz: 1, a: { yyy: [{ bb: 1, c: 2 }], x: null }, é: 'two bytes', b: 'b' });
    expect(JSON.stringify(v)).toBe('{"a":{"x":null,"yyy":[{"c":2,"bb":1}]},"b":"b","zz":1,"é":"two bytes"}');
  });
});
