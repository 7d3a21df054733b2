import { BadRequestException, ForbiddenException, HttpException, NotFoundException, UnauthorizedException } from '@nestjs/common';
import { DomainError } from './domain-error';
import { ERROR_CODES, ErrorCode } from './error-codes';
import { isDatabaseUnavailable, toErrorResponse } from './error-envelope';

const REQ = 'req_test_0001';

/** The contract table of CONTRACT section 2, written out independently of ERROR_CODES. */
const CONTRACT: Array<[ErrorCode, number, string, boolean]> = [
  ['invalid_request', 400, 'invalid_request', false],
  ['idempotency_key_required', 400, 'invalid_request', false],
  ['invalid_cursor', 400, 'invalid_request', false],
  ['unauthorized', 401, 'authentication', false],
  ['forbidden', 403, 'permission', false],
  ['not_found', 404, 'not_found', false],
  ['session_not_found', 404, 'not_found', false],
  ['run_not_found', 404, 'not_found', false],
  ['message_not_found', 404, 'not_found', false],
  ['attachment_not_found', 404, 'not_found', false],
  ['approval_not_found', 404, 'not_found', false],
  ['agent_not_found', 404, 'not_found', false],
  ['secret_not_found', 404, 'not_found', false],
  ['input_not_found', 404, 'not_found', false],
  ['webhook_not_found', 404, 'not_found', false],
  ['automation_not_found', 404, 'not_found', false],
  ['invocation_not_found', 404, 'not_found', false],
  ['session_conflict', 409, 'conflict', false],
  ['session_busy', 409, 'conflict', true],
  ['session_archived', 409, 'invalid_state', false],
  ['idempotency_conflict', 409, 'conflict', false],
  ['idempotency_in_progress', 409, 'conflict', true],
  ['attachment_not_ready', 409, 'invalid_state', true],
  ['attachment_expired', 409, 'invalid_state', false],
  ['approval_already_decided', 409, 'conflict', false],
  ['approval_not_pending', 409, 'invalid_state', false],
  ['run_finished', 409, 'invalid_state', false],
  ['tool_output_not_expected', 409, 'invalid_state', false],
  ['callback_not_expected', 409, 'invalid_state', false],
  ['agent_read_only', 409, 'conflict', false],
  ['automation_limit_reached', 409, 'conflict', false],
  ['request_timeout', 408, 'invalid_request', true],
  ['cursor_expired', 410, 'invalid_request', false],
  ['payload_too_large', 413, 'invalid_request', false],
  ['uri_too_long', 414, 'invalid_request', false],
  ['unsupported_media_type', 415, 'invalid_request', false],
  ['attachment_rejected', 422, 'invalid_state', false],
  ['rate_limited', 429, 'rate_limit', true],
  ['quota_exceeded', 429, 'rate_limit', false],
  ['headers_too_large', 431, 'invalid_request', false],
  ['internal_error', 500, 'server_error', true],
  ['unavailable', 503, 'server_error', true],
];

describe('error envelope', () => {
  it('the code table covers every contract code and nothing else', () => {
    expect(Object.keys(ERROR_CODES).sort()).toEqual(CONTRACT.map(([c]) => c).sort());
  });

  it.each(CONTRACT)('DomainError %s -> %i, type %s, retryable %s', (code, status, type, retryable) => {
    const res = toErrorResponse(new DomainError(code, `message for ${code}`, { k: 'v' }, 'run_x'), REQ);
    expect(res.status).toBe(status);
    expect(res.body).toEqual({
      error: { code, message: `message for ${code}`, type, retryable, request_id: REQ, run_id: 'run_x', details: { k: 'v' } },
    });
  });

  it('run_id defaults to null and details to {}', () => {
    const res = toErrorResponse(new DomainError('session_not_found', 'session not found'), REQ);
    expect(res.body.error.run_id).toBeNull();
    expect(res.body.error.details).toEqual({});
  });

  it.each([
    ['idempotency_in_progress', '1'],
    ['unavailable', '2'],
    ['rate_limited', '1'],
  ] as const)('%s carries Retry-After %s', (code, value) => {
    expect(toErrorResponse(new DomainError(code, 'x'), REQ).headers['retry-after']).toBe(value);
  });

  it('rate_limited takes Retry-After from details.retry_after_s', () => {
    expect(toErrorResponse(new DomainError('rate_limited', 'x', { retry_after_s: 7 }), REQ).headers['retry-after']).toBe('7');
  });

  it('codes without a retry hint carry no Retry-After', () => {
    expect(toErrorResponse(new DomainError('session_conflict', 'x'), REQ).headers).toEqual({});
  });

  describe('HttpException (Nest routing and guards)', () => {
    it('404 -> not_found', () => {
      const res = toErrorResponse(new NotFoundException('Cannot GET /nope'), REQ);
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: 'not_found', type: 'not_found', retryable: false, request_id: REQ });
      expect(res.body.error.message).not.toContain('/nope');
    });

    it.each([
      [new UnauthorizedException(), 401, 'unauthorized'],
      [new ForbiddenException(), 403, 'forbidden'],
      [new HttpException('too big', 413), 413, 'payload_too_large'],
      [new HttpException('bad type', 415), 415, 'unsupported_media_type'],
      [new HttpException('slow down', 429), 429, 'rate_limited'],
      [new BadRequestException('nope'), 400, 'invalid_request'],
      [new HttpException('gone', 410), 400, 'invalid_request'],
    ])('%p -> %i %s', (err, status, code) => {
      const res = toErrorResponse(err, REQ);
      expect(res.status).toBe(status);
      expect(res.body.error.code).toBe(code);
    });

    it('a 4xx HttpException without field errors gets details.errors = []', () => {
      expect(toErrorResponse(new BadRequestException('nope'), REQ).body.error.details).toEqual({ errors: [] });
    });
  });

  describe('fastify errors', () => {
    function fastifyError(code: string, statusCode: number, message: string): Error {
      return Object.assign(new Error(message), { code, statusCode });
    }

    it('body too large -> 413 payload_too_large', () => {
      const res = toErrorResponse(fastifyError('FST_ERR_CTP_BODY_TOO_LARGE', 413, 'Request body is too large'), REQ);
      expect(res.status).toBe(413);
      expect(res.body.error).toMatchObject({ code: 'payload_too_large', type: 'invalid_request', retryable: false });
    });

    it('unsupported media type -> 415', () => {
      const res = toErrorResponse(fastifyError('FST_ERR_CTP_INVALID_MEDIA_TYPE', 415, "Unsupported Media Type: text/plain"), REQ);
      expect(res.status).toBe(415);
      expect(res.body.error.code).toBe('unsupported_media_type');
    });

    it('empty JSON body -> 400 invalid_request with a field error', () => {
      const res = toErrorResponse(fastifyError('FST_ERR_CTP_EMPTY_JSON_BODY', 400, 'Body cannot be empty'), REQ);
      expect(res.status).toBe(400);
      expect(res.body.error.details).toEqual({ errors: [{ field: 'body', message: 'empty JSON body' }] });
    });

    it('Fastify errors wrapped by Nest as HttpException(cause) map by their code', () => {
      const fst = Object.assign(new Error("Body is not valid JSON but content-type is set to 'application/json'"), {
        name: 'FastifyError',
        code: 'FST_ERR_CTP_INVALID_JSON_BODY',
        statusCode: 400,
      });
      const res = toErrorResponse(new HttpException(fst.message, 400, { cause: fst }), REQ);
      expect(res.status).toBe(400);
      expect(res.body.error.message).toBe('malformed JSON body');
      expect(res.body.error.details).toEqual({ errors: [{ field: 'body', message: 'malformed JSON' }] });
      const big = Object.assign(new Error('Request body is too large'), { name: 'FastifyError', code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413 });
      expect(toErrorResponse(new HttpException(big.message, 413, { cause: big }), REQ).body.error.code).toBe('payload_too_large');
    });

    it("the router's rejections never echo the URL: bad percent-encoding -> 400 invalid_request, long parameter -> 414 uri_too_long", () => {
      const bad = toErrorResponse(fastifyError('FST_ERR_BAD_URL', 400, "'/v1/sessions/%ZZsecret' is not a valid url component"), REQ);
      expect(bad.status).toBe(400);
      expect(bad.body.error).toMatchObject({ code: 'invalid_request', type: 'invalid_request', retryable: false, details: { errors: [{ field: 'path', message: 'malformed percent-encoding' }] } });
      const long = toErrorResponse(fastifyError('FST_ERR_MAX_PARAM_LENGTH', 414, "'/v1/sessions/aaaasecret' is exceeding the max param length"), REQ);
      expect(long.status).toBe(414);
      expect(long.body.error).toMatchObject({ code: 'uri_too_long', type: 'invalid_request', retryable: false });
      expect(JSON.stringify([bad.body, long.body])).not.toMatch(/secret|\/v1/);
    });

    it('any other Fastify client error (4xx) -> 400 invalid_request without its message, never a retryable 500', () => {
      const res = toErrorResponse(fastifyError('FST_INVALID_MULTIPART_CONTENT_TYPE', 406, 'the request is not multipart: /v1/x?secret'), REQ);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', retryable: false, message: 'invalid request' });
      expect(toErrorResponse(fastifyError('FST_ERR_SOMETHING', 500, 'x'), REQ).status).toBe(500);
    });

    it('malformed JSON -> 400 invalid_request', () => {
      const err = Object.assign(new SyntaxError('Unexpected token } in JSON at position 9'), { statusCode: 400 });
      const res = toErrorResponse(err, REQ);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect(res.body.error.details).toEqual({ errors: [{ field: 'body', message: 'malformed JSON' }] });
    });
  });

  describe('database unavailable', () => {
    const cases: Array<[string, unknown]> = [
      ['ECONNREFUSED', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })],
      ['admin shutdown 57P01', Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })],
      ['too many connections 53300', Object.assign(new Error('sorry, too many clients already'), { code: '53300' })],
      ['a TypeORM QueryFailedError wrapping 08006', Object.assign(new Error('query failed'), { driverError: { code: '08006' } })],
      ['pg "Connection terminated"', new Error('Connection terminated unexpectedly')],
      ['pool connect timeout', new Error('timeout exceeded when trying to connect')],
      ['pg query_timeout (DB_QUERY_TIMEOUT_MS)', new Error('Query read timeout')],
    ];

    it.each(cases)('%s -> 503 unavailable with Retry-After', (_, err) => {
      expect(isDatabaseUnavailable(err)).toBe(true);
      const res = toErrorResponse(err, REQ);
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toBe('2');
      expect(res.body.error).toMatchObject({ code: 'unavailable', type: 'server_error', retryable: true, request_id: REQ });
      expect(JSON.stringify(res.body)).not.toMatch(/ECONNREFUSED|5432|terminat|timeout exceeded/);
    });

    it.each([
      ['a unique violation', Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' })],
      ['null', null],
      ['a string', 'boom'],
    ])('%s is not "unavailable"', (_, err) => {
      expect(isDatabaseUnavailable(err)).toBe(false);
    });
  });

  describe('unknown errors', () => {
    it('-> 500 internal_error without the message, stack or SQL', () => {
      const err = Object.assign(new Error('relation "secret_table" does not exist: SELECT password FROM users'), {
        code: '42P01',
        query: 'SELECT password FROM users',
      });
      const res = toErrorResponse(err, REQ);
      expect(res.status).toBe(500);
      expect(res.body).toEqual({
        error: {
          code: 'internal_error',
          message: 'internal server error',
          type: 'server_error',
          retryable: true,
          request_id: REQ,
          run_id: null,
          details: {},
        },
      });
      const text = JSON.stringify(res.body);
      expect(text).not.toMatch(/secret_table|SELECT|password|at .*\.ts|Error:/);
    });

    it.each([['a string', 'boom'], ['undefined', undefined], ['a number', 42], ['a plain object', { weird: true }]])(
      'thrown %s -> 500 internal_error',
      (_, err) => {
        const res = toErrorResponse(err, REQ);
        expect(res.status).toBe(500);
        expect(res.body.error.code).toBe('internal_error');
      },
    );
  });
});
