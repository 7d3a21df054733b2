import { BACKOFF_AFTER_FAILURES, byFailures, ENDPOINT_BACKOFF_MAX_MS, endpointLimits, endpointPolicy } from './webhook-events';

describe('endpointLimits: per-endpoint isolation by consecutive failures', () => {
  it.each([
    // failures, in flight, backoff (max 4 in flight, base 1000 ms)
    [0, 4, 0],
    [1, 4, 0],
    [BACKOFF_AFTER_FAILURES - 1, 4, 0],
    [BACKOFF_AFTER_FAILURES, 1, 1_000],
    [BACKOFF_AFTER_FAILURES + 1, 1, 2_000],
    [BACKOFF_AFTER_FAILURES + 5, 1, 32_000],
    [BACKOFF_AFTER_FAILURES + 6, 1, ENDPOINT_BACKOFF_MAX_MS],
    [10_000, 1, ENDPOINT_BACKOFF_MAX_MS],
  ])('%i failures in a row: %i in flight, %i ms before the next attempt', (failures, inFlight, backoffMs) => {
    expect(endpointLimits(failures, 4, 1_000)).toEqual({ inFlight, backoffMs });
  });

  it('the policy tables hold the rule for every count (the last entry for every count beyond)', () => {
    for (const [max, base] of [
      [4, 1_000],
      [1, 1],
      [64, 100],
      [2, 3_600_000],
    ]) {
      const p = endpointPolicy(max, base);
      expect(p.inFlightByFailures).toHaveLength(p.backoffMsByFailures.length);
      expect(p.backoffMsByFailures.at(-1)).toBe(ENDPOINT_BACKOFF_MAX_MS);
      expect(p.inFlightByFailures.length).toBeLessThan(30);
      for (const f of [0, 1, 2, 3, 4, 7, 12, 25, 40, 1_000_000]) {
        expect({ f, inFlight: byFailures(p.inFlightByFailures, f), backoffMs: byFailures(p.backoffMsByFailures, f) }).toEqual({ f, ...endpointLimits(f, max, base) });
      }
    }
  });
});
