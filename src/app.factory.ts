import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import fastifyMultipart from '@fastify/multipart';
import fastifyStatic from '@fastify/static';
import { join } from 'node:path';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import { AppModule } from './app.module';
import { AppConfig } from './common/config/app-config';
import { projectRoot } from './common/config/project-root';
import { setupOpenApi } from './common/http/openapi';
import { newId } from './common/ids/ids';
import { registerHttpLogging } from './common/logging/http-logging';
import { createRootLogger, PinoNestLogger } from './common/logging/logger';
import { httpMetricsObserver } from './common/metrics/http-metrics';
import { Metrics } from './common/metrics/metrics';
import { registerRateLimit } from './modules/ops/rate-limit';

const REQUEST_ID_RE = /^[A-Za-z0-9._-]{1,128}$/;

/** Builds the Nest application (not yet listening). Used by main.ts and by the e2e tests. */
export async function createApp(config: AppConfig): Promise<NestFastifyApplication> {
  // Structured JSON logs (pino) for Nest and Fastify alike; request bodies and headers are never logged.
  const rootLogger = createRootLogger(config.logLevel, { node_id: config.nodeId });
  const adapter = new FastifyAdapter({
    loggerInstance: rootLogger,
    // Fastify's own per-request lines are off: registerHttpLogging writes one line per request.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'req_id' }),
    bodyLimit: config.bodyMaxBytes,
    genReqId: (req: { headers: Record<string, string | string[] | undefined> }) => {
      const inbound = req.headers['x-request-id'];
      return typeof inbound === 'string' && REQUEST_ID_RE.test(inbound) ? inbound : newId('req');
    },
    requestIdHeader: false,
    // Slow clients: the whole request (headers + body) must arrive within requestTimeout, and a socket
    // with no traffic either way for connectionTimeout is closed. Neither cuts an SSE stream: its
    // request is complete once headers arrived, and keep-alive comments (SSE_KEEPALIVE_MS, which
    // the config requires to be shorter) count as traffic. headersTimeout is set on the server below.
    requestTimeout: config.httpRequestTimeoutMs,
    connectionTimeout: config.httpConnectionTimeoutMs,
    keepAliveTimeout: 72_000,
    return503OnClosing: true,
  });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config), adapter, {
    logger: new PinoNestLogger(rootLogger),
    bufferLogs: false,
    abortOnError: false,
    // Fastify parses JSON itself; Nest's extra parsers (urlencoded) would accept form bodies.
    bodyParser: false,
  });
  const fastify = app.getHttpAdapter().getInstance();
  app.getHttpServer().headersTimeout = config.httpHeadersTimeoutMs;
  registerHttpLogging(fastify, rootLogger, [httpMetricsObserver(app.get(Metrics))]);
  // Callback-style hooks (here and below): no promise and microtask hop per request (bench B4).
  fastify.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
    reply.header('x-request-id', String(req.id));
    done();
  });
  await registerRateLimit(app, config);
  // JSON is the only body type of JSON routes (uploads register multipart themselves): 415 otherwise.
  fastify.removeContentTypeParser(['text/plain']);
  // A bodiless POST that still says `Content-Type: application/json` (fetch defaults, curl -H)
  // means "no fields", like no body at all; any other body goes to Fastify's own safe parser.
  const parseJson = fastify.getDefaultJsonParser('error', 'error');
  fastify.removeContentTypeParser('application/json');
  fastify.addContentTypeParser('application/json', { parseAs: 'string' }, (req: FastifyRequest, body: string | Buffer, done: (err: Error | null, value?: unknown) => void) => {
    if (body === '' || (Buffer.isBuffer(body) && body.length === 0)) return done(null, undefined);
    return parseJson(req, body as string, done as never);
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
  await app.register(fastifyStatic as never, { root: join(projectRoot(), 'console'), prefix: '/console/', decorateReply: false, cacheControl: false });
  fastify.get('/console', (_req: FastifyRequest, reply: FastifyReply) => reply.redirect('/console/', 302));

  if (config.docsEnabled) setupOpenApi(app);
  // Signals are handled by main.ts (graceful shutdown with a hard deadline), not by Nest.
  return app;
}

export async function listen(app: NestFastifyApplication, config: AppConfig): Promise<string> {
  await app.listen({ port: config.port, host: config.host });
  const addr = app.getHttpServer().address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  new Logger('Bootstrap').log(`Agent API listening on http://${host}:${port} (docs: http://${host}:${port}/docs)`);
  return `http://${host}:${port}`;
}
