import { hashApiKey } from '../../common/auth/api-keys.service';
import { isRateLimited, rateLimitKey } from './rate-limit';

describe('rate limit keys and scope', () => {
  it('keys by the hashed API key, never the raw key, and by IP without one', () => {
    const k = rateLimitKey({ headers: { authorization: 'Bearer dev-key-0001' }, ip: '10.0.0.1' } as never);
    expect(k).toBe(`key:${hashApiKey('dev-key-0001')}`);
    expect(k).not.toContain('dev-key-0001');
    expect(rateLimitKey({ headers: {}, ip: '10.0.0.1' } as never)).toBe('ip:10.0.0.1');
    expect(rateLimitKey({ headers: { authorization: 'Basic abc' }, ip: '10.0.0.2' } as never)).toBe('ip:10.0.0.2');
  });

  it('applies to /v1 only', () => {
    expect(['/v1/sessions', '/v1/runs/run_1/events?after=3', '/v1'].map(isRateLimited)).toEqual([true, true, true]);
    expect(['/healthz', '/readyz', '/metrics', '/docs', '/docs-json', '/v10/x'].map(isRateLimited)).toEqual([false, false, false, false, false, false]);
  });
});
