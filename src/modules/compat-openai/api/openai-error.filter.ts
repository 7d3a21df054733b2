import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError } from '../../../common/errors/domain-error';
import { toErrorResponse } from '../../../common/errors/error-envelope';
import { noteErrorCode } from '../../../common/errors/response-error-code';
import { InputProblem } from '../domain/input-events';

/**
 * A request problem on this surface: our `invalid_request` (400) with OpenAI's `param`; `code`
 * may be OpenAI's own where the SDK decides by it (`invalid_request_error`: the tool dispatcher
 * retries "Unknown pending tool call" only with that code).
 */
export class OpenAiRequestError extends DomainError {
  constructor(
    message: string,
    readonly param: string | null,
    readonly openAiCode?: string,
  ) {
    super('invalid_request', message, param ? { param } : {});
  }
}

/**
 * The error envelope of the native API (which the SDK reads: `error.message`, `error.code`,
 * `error.type`), plus OpenAI's `param` (null when no parameter is at fault). The statuses are
 * the contract's: 400 BadRequestError, 401, 403, 404 NotFoundError, 409 ConflictError, 422, 429, 5xx.
 */
@Catch()
export class OpenAiErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('OpenAiCompat');

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const req = ctx.getRequest<FastifyRequest>();
    const reply = ctx.getResponse<FastifyReply>();
    const err = exception instanceof InputProblem ? new OpenAiRequestError(exception.message, exception.param) : exception;
    const res = toErrorResponse(err, String(req.id));
    const body = res.body as unknown as { error: Record<string, unknown> };
    // `param`: ours, else the first field a native validation error names (`details.errors[].field`).
    const details = res.body.error.details as { param?: string; errors?: Array<{ field?: unknown }> };
    const firstField = Array.isArray(details.errors) && typeof details.errors[0]?.field === 'string' ? details.errors[0].field : null;
    body.error.param = err instanceof OpenAiRequestError ? err.param : (details.param ?? firstField);
    if (err instanceof OpenAiRequestError && err.openAiCode) body.error.code = err.openAiCode;
    noteErrorCode(reply, String(body.error.code));
    if (res.status >= 500) this.logger.error(`${req.method} ${req.url} -> ${res.status} [${req.id}]`, exception instanceof Error ? exception.stack : String(exception));
    if (reply.sent || reply.raw.headersSent) {
      reply.raw.end();
      return;
    }
    reply.status(res.status).headers(res.headers).header('x-request-id', String(req.id)).type('application/json').send(JSON.stringify(body));
  }
}
