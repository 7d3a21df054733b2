import { ApiKeysService, ApiKeyTable, hashApiKey } from '../../common/auth/api-keys.service';
import { loadConfig } from '../../common/config/app-config';
import { isApiRoute } from '../../common/http/route-path';
import { rateLimitKey, rateLimitMax } from './rate-limit';

/** The service's lookups over a table of known keys (the database part is covered end to end). */
function keysOf(...known: string[]): ApiKeysService {
  const table = new ApiKeyTable(known.map((k, i) => ({ id: `key_${i}`, key_hash: hashApiKey(k), tenant_id: 't', subject_id: `s${i}`, role: 'member' as const })));
  return { authenticateRequest: (req: object) => table.principalOfRequest(req) } as unknown as ApiKeysService;
}

describe('rate limit buckets and scope', () => {
  const keys = keysOf('dev-key-0001', 'other-key-0002');

  it('keys a known API key by its identity (never the raw key), anything else by client IP', () => {
    const k = rateLimitKey(keys, { headers: { authorization: 'Bearer dev-key-0001' }, ip: '10.0.0.1' } as never);
    expect(k).toBe(`key:${hashApiKey('dev-key-0001').slice(0, 32)}`);
    expect(k).not.toContain('dev-key-0001');
    expect(rateLimitKey(keys, { headers: { authorization: 'Bearer other-key-0002' }, ip: '10.0.0.1' } as never)).not.toBe(k);
    expect(rateLimitKey(keys, { headers: {}, ip: '10.0.0.1' } as never)).toBe('anon:10.0.0.1');
    expect(rateLimitKey(keys, { headers: { authorization: 'Basic abc' }, ip: '10.0.0.2' } as never)).toBe('anon:10.0.0.2');
  });

  it('random unknown keys buy no budget of their own: they all share their IP bucket', () => {
    const buckets = new Set<string>();
    for (let i = 0; i < 50; i++) buckets.add(rateLimitKey(keys, { headers: { authorization: `Bearer random-${i}-${Math.random().toString(36).slice(2)}` }, ip: '10.0.0.3' } as never));
    expect([...buckets]).toEqual(['anon:10.0.0.3']);
  });

  it('an IPv6 client is one bucket per /64', () => {
    const a = rateLimitKey(keys, { headers: {}, ip: '2001:db8:1:2::1' } as never);
    const b = rateLimitKey(keys, { headers: {}, ip: '2001:db8:1:2:ffff::9' } as never);
    expect(a).toBe(b);
    expect(rateLimitKey(keys, { headers: {}, ip: '::ffff:10.0.0.4' } as never)).toBe('anon:10.0.0.4');
  });

  it('a key has RATE_LIMIT_PER_MINUTE, callers without a valid key RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE', () => {
    const config = loadConfig({ RATE_LIMIT_PER_MINUTE: '600', RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '7' });
    expect(rateLimitMax(config, 'key:abc')).toBe(600);
    expect(rateLimitMax(config, 'anon:10.0.0.1')).toBe(7);
  });

  it('applies to the routes of /v1 only, by route template', () => {
    expect(['/v1/sessions', '/v1/runs/:id/events', '/v1', '/v1/admin/audit/verify'].map(isApiRoute)).toEqual([true, true, true, true]);
    expect(['/healthz', '/readyz', '/metrics', '/docs', '/docs-json', '/v10/x', '/console/*', null, undefined].map(isApiRoute)).toEqual([
      false, false, false, false, false, false, false, false, false,
    ]);
  });

  it('applies to the AG-UI surface too (limited, authenticated, audited like /v1)', () => {
    expect(['/ag-ui/agents/:agent_id'].map(isApiRoute)).toEqual([true]);
    expect(['/ag-ui', '/ag-uix/agents'].map(isApiRoute)).toEqual([false, false]);
  });
});
