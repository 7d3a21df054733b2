import { FakeClock, SystemClock } from './clock';

describe('Clock', () => {
  it('the system clock is the real time', () => {
    const before = Date.now();
    const now = new SystemClock().now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });

  it('a fake clock stands still until moved, and only forward', () => {
    const c = new FakeClock(new Date('2026-01-01T00:00:00Z'));
    expect(c.date().toISOString()).toBe('2026-01-01T00:00:00.000Z');
    c.advance(1500);
    expect(c.now()).toBe(Date.parse('2026-01-01T00:00:01.500Z'));
    c.set(Date.parse('2026-01-02T00:00:00Z'));
    expect(c.date().toISOString()).toBe('2026-01-02T00:00:00.000Z');
    expect(() => c.advance(-1)).toThrow();
    expect(() => c.set(0)).toThrow();
  });
});
