import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import fastifyMultipart from '@fastify/multipart';
import fastifyStatic from '@fastify/static';
import { join } from 'node:path';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { AppModule } from './app.module';
import { Clock } from './common/clock/clock';
import { AppConfig } from './common/config/app-config';
import { projectRoot } from './common/config/project-root';
import { setupOpenApi } from './common/http/openapi';
import { newId } from './common/ids/ids';
import { DomainError } from './common/errors/domain-error';
import { exceedsJsonDepth, JSON_MAX_DEPTH } from './common/text/json-depth';
import { createClientErrorHandler, frameworkErrorHandler, requestIdOf } from './common/errors/http-layer-errors';
import { registerHttpLogging } from './common/logging/http-logging';
import { createRootLogger, PinoNestLogger } from './common/logging/logger';
import { httpMetricsObserver } from './common/metrics/http-metrics';
import { Metrics } from './common/metrics/metrics';
import { eventComponentSchemas } from './modules/events/api/event-schemas';
import { registerRateLimit } from './modules/ops/rate-limit';

function bodyTooDeep(): Error {
  const message = `nests deeper than ${JSON_MAX_DEPTH} levels`;
  return Object.assign(new DomainError('invalid_request', `the JSON body ${message}`, { errors: [{ field: 'body', message }] }), { statusCode: 400 });
}

function bodyNotUtf8(): Error {
  const message = 'is not valid UTF-8';
  return Object.assign(new DomainError('invalid_request', `the JSON body ${message}`, { errors: [{ field: 'body', message }] }), { statusCode: 400 });
}

/** Strict: a malformed sequence, an overlong form or an encoded surrogate is an error, not U+FFFD (a leading BOM is dropped). */
const utf8 = new TextDecoder('utf-8', { fatal: true });
function decodeUtf8(bytes: Buffer): string | null {
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}

/** Builds the Nest application (not yet listening). Used by main.ts and by the e2e tests. */
export async function createApp(config: AppConfig, options: { clock?: Clock } = {}): Promise<NestFastifyApplication> {
  // Structured JSON logs (pino) for Nest and Fastify alike; request bodies and headers are never logged.
  const rootLogger = createRootLogger(config.logLevel, { node_id: config.nodeId });
  const adapter = new FastifyAdapter({
    loggerInstance: rootLogger,
    // Fastify's own per-request lines are off: registerHttpLogging writes one line per request.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'req_id' }),
    bodyLimit: config.bodyMaxBytes,
    genReqId: (req: { headers: Record<string, string | string[] | undefined> }) => requestIdOf(req.headers['x-request-id']),
    requestIdHeader: false,
    // Slow clients: the whole request (headers + body) must arrive within requestTimeout, and a socket
    // with no traffic either way for connectionTimeout is closed. Neither cuts an SSE stream: its
    // request is complete once headers arrived, and keep-alive comments (SSE_KEEPALIVE_MS, which
    // the config requires to be shorter) count as traffic. headersTimeout is set on the server below.
    requestTimeout: config.httpRequestTimeoutMs,
    connectionTimeout: config.httpConnectionTimeoutMs,
    // Node checks those timeouts every 30 s by default, so a slow request could hold its socket up to
    // 30 s longer than allowed before its 408: check four times per headers timeout instead.
    http: { connectionsCheckingInterval: Math.min(30_000, Math.max(250, Math.floor(config.httpHeadersTimeoutMs / 4))) },
    keepAliveTimeout: 72_000,
    // Errors before any route runs get the contract envelope and X-Request-Id too (http-layer-errors.ts);
    // requests arriving while the app closes get 503 `unavailable` from the onRequest hook below.
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler: createClientErrorHandler(),
    return503OnClosing: false,
  });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config, options.clock), adapter, {
    logger: new PinoNestLogger(rootLogger),
    bufferLogs: false,
    abortOnError: false,
    // Fastify parses JSON itself; Nest's extra parsers (urlencoded) would accept form bodies.
    bodyParser: false,
  });
  const fastify = app.getHttpAdapter().getInstance();
  app.getHttpServer().headersTimeout = config.httpHeadersTimeoutMs;
  registerHttpLogging(fastify, rootLogger, [httpMetricsObserver(app.get(Metrics))]);
  let closing = false;
  fastify.addHook('preClose', (done: () => void) => {
    closing = true;
    done();
  });
  // Callback-style hooks (here and below): no promise and microtask hop per request (bench B4).
  fastify.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    reply.header('x-request-id', String(req.id));
    if (closing) return done(new DomainError('unavailable', 'this node is shutting down, retry on another', { retry_after_s: 1 }));
    done();
  });
  await registerRateLimit(app, config);
  // JSON is the only body type of JSON routes (uploads register multipart themselves): 415 otherwise.
  fastify.removeContentTypeParser(['text/plain']);
  // A bodiless POST that still says `Content-Type: application/json` (fetch defaults, curl -H)
  // means "no fields", like no body at all; any other body goes to Fastify's own safe parser.
  const parseJson = fastify.getDefaultJsonParser('error', 'error');
  fastify.removeContentTypeParser('application/json');
  fastify.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req: FastifyRequest, body: string | Buffer, done: (err: Error | null, value?: unknown) => void) => {
    if (body.length === 0) return done(null, undefined);
    // JSON is UTF-8 (RFC 8259): a lenient decode stored bytes that are not as U+FFFD.
    const text = typeof body === 'string' ? body : decodeUtf8(body);
    if (text === null) return done(bodyNotUtf8());
    // Depth first, before any parse: recursive code after it (validation, canonical JSON, jsonb)
    // would overflow its stack on a few thousand levels, in fields rejected later as unknown too.
    if (exceedsJsonDepth(text)) return done(bodyTooDeep());
    return parseJson(req, text, done as never);
  });
  // Multipart is parsed lazily (streamed by the handler) and only on routes that opt in with
  // `@RouteConfig({ multipart: true })` (uploads); every other route keeps answering 415 to it.
  await app.register(fastifyMultipart as never, { limits: { fileSize: config.attachmentMaxBytes, files: 1 }, throwFileSizeLimit: true });
  fastify.addHook('preValidation', (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    if (req.isMultipart() && (req.routeOptions.config as { multipart?: boolean } | undefined)?.multipart !== true) {
      return done(Object.assign(new Error('unsupported content type'), { code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE', statusCode: 415 }));
    }
    done();
  });

  // The web console (console/ at the repo root): public static files; the page asks for the API key.
  // In a scope of its own: a path the file server refuses (403 for `..` that leaves the root) is
  // simply not found there (404 not_found), not an API-key "forbidden" on a route without keys.
  await app.register((async (scope: FastifyInstance) => {
    scope.setErrorHandler((err: { statusCode?: number }, _req: FastifyRequest, reply: FastifyReply) => {
      if (err.statusCode === 403) return reply.callNotFound();
      throw err;
    });
    await scope.register(fastifyStatic, { root: join(projectRoot(), 'console'), prefix: '/console/', decorateReply: false, cacheControl: false });
  }) as never);
  fastify.get('/console', (_req: FastifyRequest, reply: FastifyReply) => reply.redirect('/console/', 302));

  if (config.docsEnabled) setupOpenApi(app, eventComponentSchemas());
  // Signals are handled by main.ts (graceful shutdown with a hard deadline), not by Nest.
  return app;
}

export async function listen(app: NestFastifyApplication, config: AppConfig): Promise<string> {
  await app.listen({ port: config.port, host: config.host });
  const addr = app.getHttpServer().address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  const base = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  // Without PUBLIC_BASE_URL the service's absolute URLs name the address it listens on (PORT=0: the port it got).
  if (!config.publicBaseUrlSet) config.publicBaseUrl = base;
  new Logger('Bootstrap').log(`Agent API listening on ${base} (docs: ${base}/docs, console: ${base}/console/)`);
  return base;
}
