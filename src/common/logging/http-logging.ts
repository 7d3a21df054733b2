import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger as Pino } from 'pino';
import { routeOf } from '../http/route-path';
import { errorCodeOf } from '../errors/response-error-code';
import { withLogContext } from './log-context';

const RUN_IN_PATH = /\/runs\/(run_[A-Za-z0-9]+)/;

/** The run a request is about: its `:id` path parameter or the run it created (Location header). */
export function runIdOf(req: FastifyRequest, reply: FastifyReply): string | undefined {
  const params = req.params as Record<string, unknown> | undefined;
  if (typeof params?.id === 'string' && params.id.startsWith('run_')) return params.id;
  const location = reply.getHeader('location');
  const m = typeof location === 'string' ? RUN_IN_PATH.exec(location) : null;
  return m?.[1];
}

/** An SSE response (its headers go out with writeHead on the hijacked socket, so ask the request). */
function isEventStream(req: FastifyRequest, reply: FastifyReply): boolean {
  return reply.statusCode === 200 && /text\/event-stream/i.test(String(req.headers.accept ?? ''));
}

export interface RequestObserver {
  (req: FastifyRequest, reply: FastifyReply, info: { route: string; status: number; seconds: number; stream: boolean; code: string | undefined }): void;
}

/**
 * Request context and the request log: everything a request starts runs with its `req_id` in the
 * log context (AsyncLocalStorage, entered in the first `onRequest` hook), and each finished request
 * writes one line (method, route template, status, the error `code` of an error, duration, run id).
 * Never bodies or headers.
 */
export function registerHttpLogging(fastify: FastifyInstance, logger: Pino, observers: RequestObserver[] = []): void {
  fastify.addHook('onRequest', (req, _reply, done) => {
    withLogContext({ requestId: String(req.id) }, done);
  });
  fastify.addHook('onResponse', (req, reply, done) => {
    const route = routeOf(req) ?? 'unmatched';
    const status = reply.statusCode;
    const seconds = reply.elapsedTime / 1000;
    const stream = isEventStream(req, reply);
    const code = status >= 400 ? errorCodeOf(reply) : undefined;
    for (const o of observers) o(req, reply, { route, status, seconds, stream, code });
    const level = status >= 500 ? 'error' : status >= 400 ? 'warn' : 'info';
    if (logger.isLevelEnabled(level)) {
      const runId = runIdOf(req, reply);
      logger[level](
        {
          req_id: String(req.id),
          ...(runId ? { run_id: runId } : {}),
          method: req.method,
          route,
          status,
          ...(code ? { code } : {}),
          duration_ms: Math.round(reply.elapsedTime),
          ...(stream ? { stream: 'sse' } : {}),
        },
        'request completed',
      );
    }
    done();
  });
}
