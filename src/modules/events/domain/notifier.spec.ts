import { decodeNotification, encodeNotification } from './notifier';

describe('notification payloads', () => {
  it('round-trip with and without an origin', () => {
    const n = { sessionId: 'sess_1', runId: 'run_1', lastSequence: 7, lastSessionSequence: 12 };
    expect(encodeNotification(n)).toBe('sess_1|run_1|7|12');
    expect(decodeNotification(encodeNotification(n))).toEqual(n);
    const marked = { ...n, origin: 'a1b2c3' };
    expect(encodeNotification(marked)).toBe('sess_1|run_1|7|12|a1b2c3');
    expect(decodeNotification(encodeNotification(marked))).toEqual(marked);
  });

  it('reads the payload the event store builds in SQL (an empty origin is none) and refuses malformed ones', () => {
    expect(decodeNotification('sess_1|run_1|7|12|')).toEqual({ sessionId: 'sess_1', runId: 'run_1', lastSequence: 7, lastSessionSequence: 12 });
    expect(decodeNotification('sess_1|run_1|7')).toBeNull();
    expect(decodeNotification('sess_1|run_1|7|12|o|x')).toBeNull();
    expect(decodeNotification('sess_1|run_1|x|12')).toBeNull();
    expect(decodeNotification('|run_1|7|12')).toBeNull();
  });
});
