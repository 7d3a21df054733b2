import type { FastifyRequest } from 'fastify';
import type { BatchWrite } from '../database/unit-of-work';

/**
 * Port (the audit module provides it): a state-changing request's audit record written by the
 * operation's own statement, with the change itself and its stored idempotent response, instead of
 * by a statement of its own when the response is sent (one round trip fewer per POST).
 */
export abstract class RequestAuditWriter {
  /**
   * The audit record of `req` answered with `status` and the JSON text `body`, as a write for the
   * operation's statement; null when the request is not audited or its record needs more than the
   * response (it is then recorded when the response is sent, as any other request).
   */
  abstract writeFor(req: FastifyRequest, status: number, body: string | null): BatchWrite | null;
  /** The write of `writeFor(req)` committed: the request must not be recorded again when its response is sent. */
  abstract recorded(req: FastifyRequest): void;
}
