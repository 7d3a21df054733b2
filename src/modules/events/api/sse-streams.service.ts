import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { AppConfig } from '../../../common/config/app-config';
import { SseConnection } from './sse';

/** Unsent bytes an SSE client may accumulate before its stream is closed (it resumes from its cursor). */
export const SSE_MAX_BUFFERED_BYTES = 1024 * 1024;
export const SSE_RETRY_MS = 3000;

/**
 * The open SSE connections of this node: the per-API-key limit (SSE_MAX_PER_KEY) and a clean end
 * of every stream on shutdown.
 */
@Injectable()
export class SseStreamsService implements BeforeApplicationShutdown {
  private readonly logger = new Logger('SseStreams');
  private readonly open = new Set<SseConnection>();
  private readonly perKey = new Map<string, number>();
  private closing = false;

  constructor(private readonly config: AppConfig) {}

  get count(): number {
    return this.open.size;
  }

  /** Reserves a slot for `keyId`; false when the key is at its limit (or the node is shutting down). */
  tryAcquire(keyId: string): boolean {
    if (this.closing) return false;
    const n = this.perKey.get(keyId) ?? 0;
    if (n >= this.config.sseMaxPerKey) return false;
    this.perKey.set(keyId, n + 1);
    return true;
  }

  release(keyId: string): void {
    const n = (this.perKey.get(keyId) ?? 0) - 1;
    if (n <= 0) this.perKey.delete(keyId);
    else this.perKey.set(keyId, n);
  }

  /** Opens the stream on a hijacked response; the slot of `keyId` is released when it closes. */
  start(raw: ServerResponse, keyId: string, headers: Record<string, string>): SseConnection {
    const conn = new SseConnection(raw, { keepaliveMs: this.config.sseKeepaliveMs, maxBufferedBytes: SSE_MAX_BUFFERED_BYTES });
    this.open.add(conn);
    conn.onClose((reason) => {
      this.open.delete(conn);
      this.release(keyId);
      if (reason === 'slow_client') this.logger.warn(`closed a slow SSE client (key ${keyId})`);
    });
    conn.open(headers, SSE_RETRY_MS);
    return conn;
  }

  beforeApplicationShutdown(): void {
    this.closing = true;
    for (const conn of [...this.open]) conn.end();
  }
}
