// First: refuses a Node.js older than 22.12 with one line, before anything else loads.
import './node-version';
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApp, listen } from './app.factory';
import { AppConfig, ConfigError, loadConfig } from './common/config/app-config';
import { startupFailureLine } from './startup-failure';

/** CONTRACT section 12: after SIGTERM the process is gone within 10 s, whatever happens. */
export const SHUTDOWN_DEADLINE_MS = 10_000;

/**
 * Graceful shutdown on SIGTERM / SIGINT: the listener closes first (stop accepting), then `app.close()` ends the SSE streams cleanly (clients
 * resume elsewhere with Last-Event-ID), stops the run worker and releases its leases (another node
 * resumes the runs), closes the HTTP server and then the database. A hard timer exits the process
 * if any of that hangs; a second signal exits at once.
 */
function handleSignals(app: NestFastifyApplication): void {
  let shuttingDown = false;
  const onSignal = (signal: NodeJS.Signals) => {
    const logger = new Logger('Shutdown');
    if (shuttingDown) {
      logger.warn(`${signal} again: exiting now`);
      process.exit(1);
    }
    shuttingDown = true;
    const started = Date.now();
    logger.log(`${signal} received: shutting down (deadline ${SHUTDOWN_DEADLINE_MS} ms)`);
    const hard = setTimeout(() => {
      logger.error(`shutdown did not finish within ${SHUTDOWN_DEADLINE_MS} ms: exiting`);
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS - 250);
    hard.unref();
    // Stop accepting at once: the listener closes now (idle keep-alive sockets too); requests in
    // flight finish while app.close() drains SSE streams and the worker.
    const server = app.getHttpServer();
    server.close();
    server.closeIdleConnections();
    app
      .close()
      .then(() => {
        logger.log(`shut down cleanly in ${Date.now() - started} ms`);
        process.exit(0);
      })
      .catch((err: unknown) => {
        logger.error(`shutdown failed: ${err instanceof Error ? err.message : String(err)}`);
        process.exit(1);
      });
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

/** Writes why the service cannot start: one line (the stack too with LOG_LEVEL=debug or trace), then exits 1. */
function fail(line: string, err?: unknown): never {
  process.stderr.write(`${line}\n`);
  if (err instanceof Error && err.stack && /^(debug|trace)$/i.test(process.env.LOG_LEVEL ?? '')) process.stderr.write(`${err.stack}\n`);
  process.exit(1);
}

async function main(): Promise<void> {
  let config: AppConfig;
  try {
    config = loadConfig();
  } catch (err) {
    // One line per problem, each naming the variable, its value and what is allowed.
    if (err instanceof ConfigError) fail(err.message);
    fail(startupFailureLine(err, null), err);
  }
  try {
    const app = await createApp(config);
    handleSignals(app);
    await listen(app, config);
  } catch (err) {
    fail(startupFailureLine(err, config), err);
  }
}

main().catch((err) => fail(startupFailureLine(err, null), err));
