import fastifyRateLimit from '@fastify/rate-limit';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyRequest } from 'fastify';
import { requestKeyHash } from '../../common/auth/api-keys.service';
import { AppConfig } from '../../common/config/app-config';
import { DomainError } from '../../common/errors/domain-error';

const BEARER = /^Bearer\s+(\S{1,512})\s*$/i;
export const RATE_LIMIT_WINDOW_MS = 60_000;

/** The rate-limit bucket of a request: the hashed API key (never the raw key), else the client IP. */
export function rateLimitKey(req: Pick<FastifyRequest, 'headers' | 'ip'>): string {
  const header = req.headers.authorization;
  const m = typeof header === 'string' ? BEARER.exec(header) : null;
  return m ? `key:${requestKeyHash(req, m[1])}` : `ip:${req.ip}`;
}

/** Only the API is limited; health, readiness, metrics and docs are not. */
export function isRateLimited(url: string): boolean {
  return url === '/v1' || url.startsWith('/v1/') || url.startsWith('/v1?');
}

/**
 * Per-key rate limit (RATE_LIMIT_PER_MINUTE) on `/v1/*`, per node (in memory, fixed one-minute
 * window). It runs in `onRequest`, before auth and before any handler, so a 429 never reaches the
 * idempotency store. The rejection is a `rate_limited` DomainError: the global filter writes the
 * contract envelope with `Retry-After` (seconds until the window resets).
 */
export async function registerRateLimit(app: NestFastifyApplication, config: AppConfig): Promise<void> {
  await app.register(fastifyRateLimit as never, {
    global: true,
    max: config.rateLimitPerMinute,
    timeWindow: RATE_LIMIT_WINDOW_MS,
    hook: 'onRequest',
    cache: 10_000,
    allowList: (req: FastifyRequest) => !isRateLimited(req.url),
    keyGenerator: rateLimitKey,
    addHeadersOnExceeding: { 'x-ratelimit-limit': true, 'x-ratelimit-remaining': true, 'x-ratelimit-reset': true },
    addHeaders: { 'x-ratelimit-limit': true, 'x-ratelimit-remaining': true, 'x-ratelimit-reset': true, 'retry-after': true },
    errorResponseBuilder: (_req: FastifyRequest, ctx: { ttl: number; max: number }) => {
      const retryAfter = Math.max(1, Math.ceil(ctx.ttl / 1000));
      return Object.assign(
        new DomainError('rate_limited', `rate limit of ${ctx.max} requests per minute exceeded`, { retry_after_s: retryAfter, limit: ctx.max }),
        { statusCode: 429 },
      );
    },
  });
}
