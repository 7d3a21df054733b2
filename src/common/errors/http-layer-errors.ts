import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { newId } from '../ids/ids';
import { DomainError } from './domain-error';
import { sendError } from './all-exceptions.filter';
import { ErrorResponse, toErrorResponse } from './error-envelope';

/**
 * The errors the HTTP layer produces before any route runs, in the same envelope (and with the
 * same X-Request-Id header) as every other error:
 * - the router's (`frameworkErrors`): a malformed percent-encoding (400 `invalid_request`), a path
 *   parameter longer than the router allows (414 `uri_too_long`);
 * - Node's HTTP parser and server timeouts (`clientError`): headers over the size limit (431
 *   `headers_too_large`), a request not complete in time (408 `request_timeout`), anything else
 *   that is not HTTP (a malformed request line, header or chunk: 400 `invalid_request`).
 */

/** Fastify's `frameworkErrors`: the router's rejections go through the one error writer. */
export function frameworkErrorHandler(error: Error, request: FastifyRequest, reply: FastifyReply): void {
  sendError(reply, request, error);
}

/** The envelope for a `clientError` of Node's HTTP server (by the error's `code`). */
export function clientErrorResponse(err: { code?: string }, requestId: string): ErrorResponse {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return toErrorResponse(new DomainError('request_timeout', 'the request did not arrive in time'), requestId);
    case 'HPE_HEADER_OVERFLOW':
      return toErrorResponse(new DomainError('headers_too_large', 'the request line and headers are too large'), requestId);
    default:
      return toErrorResponse(new DomainError('invalid_request', 'malformed HTTP request', { errors: [] }), requestId);
  }
}

/** The request id rule of every response (CONTRACT section 2): a valid inbound X-Request-Id, else a new one. */
export function requestIdOf(inbound: string | string[] | undefined): string {
  return typeof inbound === 'string' && REQUEST_ID_RE.test(inbound) ? inbound : newId('req');
}

export const REQUEST_ID_RE = /^[A-Za-z0-9._-]{1,128}$/;

/** The socket's response in progress, if a request on it got as far as complete headers. */
function pendingResponse(socket: Socket): ServerResponse | null {
  return (socket as unknown as { _httpMessage?: ServerResponse | null })._httpMessage ?? null;
}

/**
 * Fastify's `clientErrorHandler` (Node's `clientError`): writes the envelope on the raw socket and
 * closes it, as Node does, unless a response already started there (then it only closes). The
 * request id follows the usual rule for the request in progress on the socket (its headers were
 * complete: a body that failed or timed out); the headers of a request that failed to parse are
 * not read at all, so it gets a new one.
 */
export function createClientErrorHandler(logger = new Logger('HttpErrors')): (err: Error & { code?: string }, socket: Socket) => void {
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const pending = pendingResponse(socket);
    if (!socket.writable || pending?.headersSent) {
      socket.destroy();
      return;
    }
    const requestId = requestIdOf(pending?.req?.headers['x-request-id']);
    const res = clientErrorResponse(err, requestId);
    const body = JSON.stringify(res.body);
    const extra = Object.entries(res.headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    logger.debug(`client error ${err.code ?? 'unknown'} -> ${res.status} [${requestId}]`);
    socket.end(
      `HTTP/1.1 ${res.status} ${STATUS_CODES[res.status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
        `x-request-id: ${requestId}\r\n${extra}connection: close\r\n\r\n${body}`,
    );
    // A client that does not read must not keep the socket: it is gone once the bytes are out, or soon.
    setTimeout(() => socket.destroy(), 1_000).unref();
  };
}
