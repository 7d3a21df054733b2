import { Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { keyIdentityOf } from '../../common/auth/api-keys.service';
import { Principal } from '../../common/auth/principal';
import { DomainError } from '../../common/errors/domain-error';
import { encodeSseFrame, SseConnection, SseFrame } from '../events/api/sse';
import { SseStreamsService, StreamTarget } from '../events/api/sse-streams.service';

/**
 * Opens an SSE response for an adapter the way the native streams do: the caller's per-key
 * stream slot (SSE_MAX_PER_KEY, 429 when full), the hijacked response with the native headers
 * (plus the adapter's own) and keep-alives, closed on shutdown and when `target` (the session or
 * run it follows) is deleted.
 */
@Injectable()
export class CompatSse {
  constructor(private readonly sse: SseStreamsService) {}

  async open(principal: Principal, req: FastifyRequest, reply: FastifyReply, target: StreamTarget, headers: Record<string, string> = {}): Promise<SseConnection> {
    const key = keyIdentityOf(principal);
    if (!(await this.sse.acquire(key))) {
      throw new DomainError('rate_limited', 'too many open event streams for this API key', { retry_after_s: 5 });
    }
    reply.hijack();
    return this.sse.start(reply.raw, key, { ...headers, 'x-request-id': String(req.id) }, target);
  }
}

/** Writes `frames` as one chunk (nothing when there are none); false when the stream is closed. */
export function writeFrames(conn: SseConnection, frames: SseFrame[]): boolean {
  if (frames.length === 0) return !conn.isClosed;
  let text = '';
  for (const f of frames) text += encodeSseFrame(f);
  return conn.write(text);
}
