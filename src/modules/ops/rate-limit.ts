import fastifyRateLimit, { normalizeIP } from '@fastify/rate-limit';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance, FastifyRequest, onRequestHookHandler, RouteOptions } from 'fastify';
import { ApiKeysService, keyIdentityOf } from '../../common/auth/api-keys.service';
import { AppConfig } from '../../common/config/app-config';
import { DomainError } from '../../common/errors/domain-error';
import { isApiRoute } from '../../common/http/route-path';
import { SharedRedis } from '../../common/redis/shared-redis';

export const RATE_LIMIT_WINDOW_MS = 60_000;
/** Buckets a node keeps in memory (an LRU: the least recently seen bucket goes first). */
const LOCAL_BUCKETS = 10_000;

type StoreCallback = (err: Error | null, res?: { current: number; ttl: number }) => void;
interface RateLimitStore {
  incr(key: string, cb: StoreCallback, timeWindow: number, max: number): void;
  child(options: unknown): RateLimitStore;
}
type StoreCtor = new (continueExceeding: boolean, exponentialBackoff: boolean, ...rest: unknown[]) => RateLimitStore;
// The plugin's own stores (plain JS, no typings): the in-memory LRU and the Redis script.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const LocalStore: StoreCtor = require('@fastify/rate-limit/store/LocalStore');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const RedisStore: StoreCtor = require('@fastify/rate-limit/store/RedisStore');

/**
 * The store with REDIS_URL: the plugin's Redis store (one script call per request, the budget
 * shared by every node), and this node's memory while Redis is not connected or fails a call,
 * so an outage of Redis leaves per-node limits rather than none (and never an error).
 */
function sharedStore(redis: SharedRedis, nameSpace: string): new () => RateLimitStore {
  return class SharedWithLocalFallback implements RateLimitStore {
    private readonly shared = new RedisStore(false, false, redis.client, nameSpace);
    private readonly local = new LocalStore(false, false, LOCAL_BUCKETS);

    incr(key: string, cb: StoreCallback, timeWindow: number, max: number): void {
      if (!redis.connected) return this.local.incr(key, cb, timeWindow, max);
      this.shared.incr(
        key,
        (err, res) => {
          if (!err) return cb(null, res);
          redis.logError(err);
          this.local.incr(key, cb, timeWindow, max);
        },
        timeWindow,
        max,
      );
    }

    child(): RateLimitStore {
      return this;
    }
  };
}

const KEY_BUCKET = 'key:';
const ANONYMOUS_BUCKET = 'anon:';

/**
 * The rate-limit bucket of a request: its API key's identity when the key is known (never the raw
 * key), else its client IP (IPv6 by /64). A request without a valid key is going to fail
 * authentication: all of those share the IP's smaller budget, so random keys buy no fresh budget.
 */
export function rateLimitKey(keys: ApiKeysService, req: Pick<FastifyRequest, 'headers' | 'ip'>): string {
  const principal = keys.authenticateRequest(req);
  return principal ? KEY_BUCKET + keyIdentityOf(principal) : ANONYMOUS_BUCKET + normalizeIP(req.ip);
}

/** The budget of a bucket per window. */
export function rateLimitMax(config: AppConfig, bucket: string): number {
  return bucket.startsWith(KEY_BUCKET) ? config.rateLimitPerMinute : config.rateLimitUnauthenticatedPerMinute;
}

/**
 * The rate limit (RATE_LIMIT_PER_MINUTE per API key, RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE per
 * client IP without a valid key; fixed one-minute window) on every API route. Which requests are
 * limited is decided by the route they matched, never by the request's URL text: the limiter is
 * attached, when a route is registered, to the routes of the API (`isApiRoute` of the route
 * template), so `GET http://host/v1/...` or `/%76%31/...`, which the router matches to the same
 * route, are counted like `/v1/...`. It runs in `onRequest`, before auth and before any handler,
 * so a 429 never reaches the idempotency store. The rejection is a `rate_limited` DomainError: the
 * global filter writes the contract envelope with `Retry-After` (seconds until the window resets).
 *
 * Counted per node in memory; with REDIS_URL, in Redis, shared by every node (one round trip per
 * limited request; while Redis cannot answer, per node again).
 */
export async function registerRateLimit(app: NestFastifyApplication, config: AppConfig): Promise<void> {
  const keys = app.get(ApiKeysService);
  const redis = app.get(SharedRedis);
  await app.register(fastifyRateLimit as never, {
    global: false,
    max: (_req: FastifyRequest, bucket: string) => rateLimitMax(config, bucket),
    timeWindow: RATE_LIMIT_WINDOW_MS,
    hook: 'onRequest',
    cache: LOCAL_BUCKETS,
    ...(redis.client ? { store: sharedStore(redis, `${redis.prefix}rl:`) } : {}),
    keyGenerator: (req: FastifyRequest) => rateLimitKey(keys, req),
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
  const fastify = app.getHttpAdapter().getInstance() as FastifyInstance;
  // One handler (one store) for every API route: a key's budget is shared by all routes.
  const limit = (fastify as unknown as { rateLimit(): onRequestHookHandler }).rateLimit();
  fastify.addHook('onRoute', (route: RouteOptions) => {
    if (!isApiRoute(route.url)) return;
    const hooks = route.onRequest;
    route.onRequest = hooks === undefined ? [limit] : Array.isArray(hooks) ? [...hooks, limit] : [hooks, limit];
  });
}
