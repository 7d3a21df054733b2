import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { noteErrorCode } from './response-error-code';
import { toErrorResponse } from './error-envelope';

/** Writes the contract error envelope for everything thrown in a Nest handler, guard or pipe. */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const request = ctx.getRequest<FastifyRequest>();
    const reply = ctx.getResponse<FastifyReply>();
    sendError(reply, request, exception, this.logger);
  }
}

export function sendError(reply: FastifyReply, request: FastifyRequest, exception: unknown, logger?: Logger): void {
  const res = toErrorResponse(exception, String(request.id));
  noteErrorCode(reply, res.body.error.code);
  if (res.status >= 500) {
    (logger ?? new Logger('Errors')).error(
      `${request.method} ${request.url} -> ${res.status} ${res.body.error.code} [${request.id}]`,
      exception instanceof Error ? exception.stack : String(exception),
    );
  }
  if (reply.sent || reply.raw.headersSent) {
    // A streaming response already started (SSE): the only honest thing left is to end it.
    reply.raw.end();
    return;
  }
  reply.status(res.status).headers(res.headers).header('x-request-id', String(request.id)).type('application/json').send(JSON.stringify(res.body));
}
