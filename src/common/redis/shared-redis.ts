import { Global, Injectable, Logger, Module, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import Redis from 'ioredis';
import { AppConfig } from '../config/app-config';

/** A command Redis has not answered within this fails (the limits then fall back to this node). */
export const REDIS_COMMAND_TIMEOUT_MS = 500;
const REDIS_CONNECT_WAIT_MS = 3_000;

/**
 * The connection to `REDIS_URL`, where the limits shared by all nodes live (the rate limit and
 * the SSE streams per key); `client` is null when REDIS_URL is unset and every limit is per node.
 * Redis is not the system of record: when it cannot be reached, commands fail at once (no offline
 * queue, a short command timeout) and each limit falls back to counting on this node, so an
 * outage of Redis never takes the API down or makes requests wait; ioredis reconnects.
 */
@Injectable()
export class SharedRedis implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Redis');
  readonly client: Redis | null;
  /** Prefix of every key this service writes (REDIS_KEY_PREFIX). */
  readonly prefix: string;
  private lastErrorLog = 0;

  constructor(config: AppConfig) {
    this.prefix = config.redisKeyPrefix;
    this.client = config.redisUrl
      ? new Redis(config.redisUrl, {
          lazyConnect: true,
          enableOfflineQueue: false,
          maxRetriesPerRequest: 1,
          commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
          connectTimeout: REDIS_CONNECT_WAIT_MS,
          retryStrategy: (times) => Math.min(times * 200, 2_000),
        })
      : null;
    this.client?.on('error', (err: Error) => this.logError(err));
  }

  get connected(): boolean {
    return this.client?.status === 'ready';
  }

  /** Connects before the node serves (so the first requests already share); never fails start-up. */
  async onModuleInit(): Promise<void> {
    if (!this.client) return;
    try {
      await this.client.connect();
      this.logger.log(`shared limits in Redis (key prefix "${this.prefix}")`);
    } catch (err) {
      this.logger.error(`Redis is unreachable (${(err as Error).message}): limits are counted per node until it is back`);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    if (!this.client) return;
    await this.client.quit().catch(() => this.client?.disconnect());
  }

  /** Logs a Redis error at most every 10 s (an outage would otherwise log every request). */
  logError(err: Error): void {
    const now = Date.now();
    if (now - this.lastErrorLog < 10_000) return;
    this.lastErrorLog = now;
    this.logger.warn(`Redis: ${err.message}`);
  }
}

@Global()
@Module({ providers: [SharedRedis], exports: [SharedRedis] })
export class SharedRedisModule {}
