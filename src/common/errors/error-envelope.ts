import { HttpException } from '@nestjs/common';
import { DomainError, FieldError } from './domain-error';
import { ERROR_CODES, ErrorCode, ErrorType } from './error-codes';

/** The body of every non-2xx response (CONTRACT section 2). */
export interface ErrorEnvelope {
  error: {
    code: string;
    message: string;
    type: ErrorType;
    retryable: boolean;
    request_id: string;
    run_id: string | null;
    details: Record<string, unknown>;
  };
}

export interface ErrorResponse {
  status: number;
  body: ErrorEnvelope;
  headers: Record<string, string>;
}

const PG_UNAVAILABLE_CODES = new Set(['57P01', '57P02', '57P03', '08000', '08001', '08003', '08004', '08006', '53300']);
const NET_UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH']);

/** True for errors that mean "the database cannot be reached right now". */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const e = err as { code?: unknown; driverError?: unknown; message?: unknown };
  if (typeof e.code === 'string' && (PG_UNAVAILABLE_CODES.has(e.code) || NET_UNAVAILABLE_CODES.has(e.code))) return true;
  if (e.driverError) return isDatabaseUnavailable(e.driverError);
  const msg = typeof e.message === 'string' ? e.message : '';
  return (
    /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|terminating connection|Query read timeout/i.test(
      msg,
    )
  );
}

function envelope(
  code: ErrorCode,
  message: string,
  requestId: string,
  details: Record<string, unknown> = {},
  runId: string | null = null,
): ErrorResponse {
  const spec = ERROR_CODES[code];
  const headers: Record<string, string> = {};
  if (code === 'idempotency_in_progress') headers['retry-after'] = '1';
  if (code === 'unavailable') headers['retry-after'] = String(details.retry_after_s ?? 2);
  if (code === 'rate_limited') headers['retry-after'] = String(details.retry_after_s ?? 1);
  // Other retryable conflicts say when a retry makes sense too.
  if (code === 'session_busy') headers['retry-after'] = '1';
  if (code === 'attachment_not_ready') headers['retry-after'] = String(Math.max(1, Math.ceil(Number(details.retry_after_ms ?? 1000) / 1000)));
  return {
    status: spec.status,
    headers,
    body: {
      error: { code, message, type: spec.type, retryable: spec.retryable, request_id: requestId, run_id: runId, details },
    },
  };
}

/** Fastify's own errors (body parsing, limits) by their `code`. */
function fromFastifyError(err: { code?: string; statusCode?: number; message?: string }, requestId: string): ErrorResponse | null {
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
    case 'FST_REQ_FILE_TOO_LARGE':
      return envelope('payload_too_large', 'request body is too large', requestId);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return envelope('unsupported_media_type', 'unsupported content type', requestId);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return envelope('invalid_request', 'body must not be empty when content-type is application/json', requestId, {
        errors: [{ field: 'body', message: 'empty JSON body' }],
      });
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return envelope('invalid_request', 'malformed JSON body', requestId, { errors: [{ field: 'body', message: 'malformed JSON' }] });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return envelope('invalid_request', 'invalid content-length', requestId, { errors: [] });
    // The router's own rejections (no route was matched): the message never echoes the URL.
    case 'FST_ERR_BAD_URL':
      return envelope('invalid_request', 'the request path is not a valid URL (malformed percent-encoding)', requestId, {
        errors: [{ field: 'path', message: 'malformed percent-encoding' }],
      });
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return envelope('uri_too_long', 'a path parameter is too long', requestId);
    default:
      break;
  }
  if (err instanceof SyntaxError || (err.statusCode === 400 && /JSON/i.test(err.message ?? ''))) {
    return envelope('invalid_request', 'malformed JSON body', requestId, { errors: [{ field: 'body', message: 'malformed JSON' }] });
  }
  // Any other client error Fastify or one of its plugins raises (e.g. a multipart request they
  // refuse): the client's fault, never a retryable 500; its message may quote the request, so it is not passed on.
  if (typeof err.code === 'string' && err.code.startsWith('FST_') && typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
    return envelope('invalid_request', 'invalid request', requestId, { errors: [] });
  }
  return null;
}

/** Maps any thrown value to the contract's error response. Never leaks stacks or SQL. */
export function toErrorResponse(err: unknown, requestId: string): ErrorResponse {
  if (err instanceof DomainError) return envelope(err.code, err.message, requestId, err.details, err.runId);
  if (err instanceof HttpException) {
    // Nest's Fastify adapter wraps Fastify's own 4xx errors (body parsing, limits) as `cause`.
    const cause = (err as { cause?: unknown }).cause;
    if (cause && typeof cause === 'object') {
      const fastify = fromFastifyError(cause as { code?: string }, requestId);
      if (fastify) return fastify;
    }
    const status = err.getStatus();
    const response = err.getResponse() as { fieldErrors?: FieldError[] } | string;
    if (status === 404) return envelope('not_found', 'no such route', requestId);
    if (status === 401) return envelope('unauthorized', 'missing or unknown API key', requestId);
    if (status === 403) return envelope('forbidden', 'this API key may not do that', requestId);
    if (status === 413) return envelope('payload_too_large', 'request body is too large', requestId);
    if (status === 415) return envelope('unsupported_media_type', 'unsupported content type', requestId);
    if (status === 429) return envelope('rate_limited', 'too many requests', requestId);
    if (status >= 400 && status < 500) {
      const errors = typeof response === 'object' && response?.fieldErrors ? response.fieldErrors : [];
      return envelope('invalid_request', err.message || 'invalid request', requestId, { errors });
    }
  }
  if (err && typeof err === 'object') {
    const fastify = fromFastifyError(err as { code?: string }, requestId);
    if (fastify) return fastify;
  }
  if (isDatabaseUnavailable(err)) {
    return envelope('unavailable', 'the database is unavailable, retry shortly', requestId, { retry_after_s: 2 });
  }
  return envelope('internal_error', 'internal server error', requestId);
}
