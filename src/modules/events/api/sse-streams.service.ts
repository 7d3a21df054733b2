import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import type { ServerResponse } from 'node:http';
import { AppConfig } from '../../../common/config/app-config';
import { SharedRedis } from '../../../common/redis/shared-redis';
import { ExistingRunsQuery, ExistingSessionsQuery } from '../application/stream-targets.query';
import { SharedStreamCounts } from '../infrastructure/shared-stream-counts';
import { SseConnection } from './sse';

export interface StreamTarget {
  kind: 'run' | 'session';
  id: string;
}

/** Unsent bytes an SSE client may accumulate before its stream is closed (it resumes from its cursor). */
export const SSE_MAX_BUFFERED_BYTES = 1024 * 1024;
export const SSE_RETRY_MS = 3000;

/**
 * The open SSE connections of this node: the per-API-key limit (SSE_MAX_PER_KEY) and a clean end
 * of every stream on shutdown. The limit counts this node's streams; with REDIS_URL, every
 * node's (SharedStreamCounts: one Redis round trip per stream opened or closed, a heartbeat every
 * third of REDIS_NODE_TTL_MS). If Redis cannot answer, this node's own count decides.
 */
@Injectable()
export class SseStreamsService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('SseStreams');
  private readonly open = new Set<SseConnection>();
  private readonly targets = new Map<SseConnection, StreamTarget>();
  private sweepTimer: NodeJS.Timeout | null = null;
  private readonly perKey = new Map<string, number>();
  private closing = false;
  private readonly shared: SharedStreamCounts | null;
  private heartbeatTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly config: AppConfig,
    private readonly queries: QueryBus,
    private readonly redis: SharedRedis,
  ) {
    this.shared = redis.client ? new SharedStreamCounts(redis.client, redis.prefix, config.nodeId, config.redisNodeTtlMs) : null;
  }

  /**
   * A stream whose run or session was deleted would otherwise only ever get keep-alives: every
   * few seconds the node checks (two bounded queries, whatever the number of streams) that the
   * targets of its open streams still exist, and ends the streams of those that do not.
   */
  onApplicationBootstrap(): void {
    const every = Math.min(15_000, Math.max(1_000, this.config.sseKeepaliveMs));
    this.sweepTimer = setInterval(() => void this.endOrphans().catch((err) => this.logger.warn(`orphan sweep failed: ${(err as Error).message}`)), every);
    this.sweepTimer.unref();
    if (this.shared) {
      const shared = this.shared;
      this.heartbeatTimer = setInterval(() => void shared.heartbeat(this.perKey).catch((err: Error) => this.redis.logError(err)), Math.max(100, Math.floor(shared.ttlMs / 3)));
      this.heartbeatTimer.unref();
    }
  }

  async endOrphans(): Promise<number> {
    const runs = new Set<string>();
    const sessions = new Set<string>();
    for (const t of this.targets.values()) (t.kind === 'run' ? runs : sessions).add(t.id);
    if (runs.size === 0 && sessions.size === 0) return 0;
    const [liveRuns, liveSessions] = await Promise.all([
      runs.size ? this.queries.execute(new ExistingRunsQuery([...runs])) : Promise.resolve([] as string[]),
      sessions.size ? this.queries.execute(new ExistingSessionsQuery([...sessions])) : Promise.resolve([] as string[]),
    ]);
    const alive = new Set([...liveRuns, ...liveSessions]);
    let ended = 0;
    for (const [conn, t] of [...this.targets]) {
      if ((t.kind === 'run' ? runs : sessions).has(t.id) && !alive.has(t.id)) {
        conn.end();
        ended++;
      }
    }
    return ended;
  }

  get count(): number {
    return this.open.size;
  }

  /**
   * Reserves a stream slot for the API key `key` (its identity, the same on every node); false
   * when the key is at its limit (or the node is shutting down). The slot is taken here first,
   * so concurrent opens on this node never overshoot while Redis answers.
   */
  async acquire(key: string): Promise<boolean> {
    if (this.closing) return false;
    const n = (this.perKey.get(key) ?? 0) + 1;
    if (n > this.config.sseMaxPerKey) return false;
    this.perKey.set(key, n);
    if (!this.shared) return true;
    let admitted: boolean;
    try {
      admitted = await this.shared.acquire(key, n, this.config.sseMaxPerKey);
    } catch (err) {
      this.redis.logError(err as Error);
      admitted = true; // this node's own count (checked above) decides
    }
    if (!admitted) this.release(key);
    return admitted;
  }

  release(key: string): void {
    const n = (this.perKey.get(key) ?? 0) - 1;
    if (n <= 0) this.perKey.delete(key);
    else this.perKey.set(key, n);
    this.shared?.setCount(key, Math.max(0, n)).catch((err: Error) => this.redis.logError(err));
  }

  /** Opens the stream on a hijacked response; the slot of `key` (from `acquire`) is released when it closes. */
  start(raw: ServerResponse, key: string, headers: Record<string, string>, target?: StreamTarget): SseConnection {
    const conn = new SseConnection(raw, { keepaliveMs: this.config.sseKeepaliveMs, maxBufferedBytes: SSE_MAX_BUFFERED_BYTES });
    this.open.add(conn);
    if (target) this.targets.set(conn, target);
    conn.onClose((reason) => {
      this.open.delete(conn);
      this.targets.delete(conn);
      this.release(key);
      if (reason === 'slow_client') this.logger.warn('closed a slow SSE client');
    });
    conn.open(headers, SSE_RETRY_MS);
    return conn;
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    for (const conn of [...this.open]) conn.end();
    await this.shared?.leave().catch((err: Error) => this.redis.logError(err));
  }
}
