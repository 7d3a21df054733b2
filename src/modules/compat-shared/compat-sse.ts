import { Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { keyIdentityOf } from '../../common/auth/api-keys.service';
import { Principal } from '../../common/auth/principal';
import { DomainError } from '../../common/errors/domain-error';
import { SseConnection } from '../events/api/sse';
import { SseStreamsService } from '../events/api/sse-streams.service';

/**
 * Opens an SSE response for an adapter the way the native streams do: the caller's per-key
 * stream slot (SSE_MAX_PER_KEY, 429 when full), the hijacked response with the native headers
 * and keep-alives, closed on shutdown and when the session is deleted.
 */
@Injectable()
export class CompatSse {
  constructor(private readonly sse: SseStreamsService) {}

  async open(principal: Principal, req: FastifyRequest, reply: FastifyReply, sessionId: string): Promise<SseConnection> {
    const key = keyIdentityOf(principal);
    if (!(await this.sse.acquire(key))) {
      throw new DomainError('rate_limited', 'too many open event streams for this API key', { retry_after_s: 5 });
    }
    reply.hijack();
    return this.sse.start(reply.raw, key, { 'x-request-id': String(req.id) }, { kind: 'session', id: sessionId });
  }
}
