import { AgentApiClient, MAX_RETRY_DELAY_MS, retryDelay } from './client';

describe('retryDelay (equal jitter over an exponential backoff)', () => {
  it.each([
    [0, 250, [125, 250]],
    [1, 250, [250, 500]],
    [2, 250, [500, 1000]],
    [6, 250, [MAX_RETRY_DELAY_MS / 2, MAX_RETRY_DELAY_MS]],
  ])('attempt %d, base %d: within %j, spread across it', (attempt, base, [lo, hi]) => {
    expect(retryDelay(attempt, base, null, () => 0)).toBe(lo);
    expect(retryDelay(attempt, base, null, () => 0.999999)).toBe(hi);
    const seen = new Set(Array.from({ length: 200 }, () => retryDelay(attempt, base, null)));
    for (const d of seen) {
      expect(d).toBeGreaterThanOrEqual(lo);
      expect(d).toBeLessThanOrEqual(hi);
    }
    // Jitter: clients that failed together do not all wait the same time.
    expect(seen.size).toBeGreaterThan(20);
  });

  it('a longer Retry-After wins, with up to 20% jitter on top; a shorter one does not shorten the backoff', () => {
    expect(retryDelay(0, 250, 2, () => 0)).toBe(2000);
    expect(retryDelay(0, 250, 2, () => 0.999999)).toBe(2400);
    expect(retryDelay(4, 250, 1, () => 0)).toBe(2000);
  });
});

describe('AgentApiClient retries', () => {
  it('retries a retryable failure after jittered delays, reusing the Idempotency-Key', async () => {
    const calls: Array<{ at: number; key: string | null }> = [];
    const fetchImpl = (async (_url: string, init: RequestInit) => {
      calls.push({ at: Date.now(), key: new Headers(init.headers).get('idempotency-key') });
      if (calls.length < 3) return new Response(JSON.stringify({ error: { code: 'unavailable', message: 'down', type: 'server_error', retryable: true } }), { status: 503 });
      return new Response(JSON.stringify({ id: 'sess_1' }), { status: 201 });
    }) as typeof fetch;
    const client = new AgentApiClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'k', fetch: fetchImpl, retries: 2, retryDelayMs: 40 });
    await expect(client.createSession({})).resolves.toEqual({ id: 'sess_1' });
    expect(calls).toHaveLength(3);
    expect(new Set(calls.map((c) => c.key)).size).toBe(1);
    expect(calls[1].at - calls[0].at).toBeGreaterThanOrEqual(18);
    expect(calls[2].at - calls[1].at).toBeGreaterThanOrEqual(38);
  });
});
