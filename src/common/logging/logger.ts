import type { LoggerService } from '@nestjs/common';
import pino, { DestinationStream, Logger as Pino } from 'pino';
import { LogLevel } from '../config/app-config';
import { currentLogContext } from './log-context';

/** Header and body paths that must never reach a log line. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'headers.cookie',
  'req.body',
  'body',
];

/**
 * Start-up chatter written at `debug` instead of `info`, so that `info` starts with a couple of
 * lines (the listening address, the development-key warning): Nest's module and route lines
 * (by context) and Fastify's one "Server listening at" line per interface (by message).
 */
export const STARTUP_DEBUG_CONTEXTS = new Set(['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication']);
/**
 * Contexts whose error lines only repeat an error Nest also throws to its caller (the app is
 * built with `abortOnError: false`): `ExceptionHandler` (a provider or module failing while the
 * app is created) and `NestApplication` (listen failing). They are not logged: main.ts prints that
 * error once, as one line, and a test sees it as the rejection.
 */
export const RETHROWN_ERROR_CONTEXTS = new Set(['ExceptionHandler', 'NestApplication']);
const FASTIFY_LISTENING = 'Server listening at ';
const INFO = 30;

/** The process's root logger: JSON lines on stdout (or `destination`), ISO times, level names. */
export function createRootLogger(level: LogLevel, base: Record<string, unknown> = {}, destination?: DestinationStream): Pino {
  return pino(
    {
      level,
      base: { pid: process.pid, ...base },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      hooks: {
        logMethod(args, method, level) {
          if (level === INFO && typeof args[0] === 'string' && args[0].startsWith(FASTIFY_LISTENING)) {
            if (this.isLevelEnabled('debug')) this.debug(...(args as [string]));
            return;
          }
          method.apply(this, args);
        },
      },
    },
    destination,
  );
}

/** The fields of the ambient request/run context, in log-line names. */
export function contextFields(): Record<string, string> {
  const ctx = currentLogContext();
  const out: Record<string, string> = {};
  if (ctx?.requestId) out.req_id = ctx.requestId;
  if (ctx?.runId) out.run_id = ctx.runId;
  return out;
}

const STACK_RE = /\n\s+at /;

/**
 * Nest's logger on pino: every line is one JSON object with `context`, and the ambient
 * `req_id` / `run_id` (see log-context.ts). Objects given as the message are merged as fields.
 */
export class PinoNestLogger implements LoggerService {
  constructor(readonly pino: Pino) {}

  log(message: unknown, ...params: unknown[]): void {
    const context = params[params.length - 1];
    this.write(typeof context === 'string' && STARTUP_DEBUG_CONTEXTS.has(context) ? 'debug' : 'info', message, params);
  }
  error(message: unknown, ...params: unknown[]): void {
    const context = params[params.length - 1];
    if (typeof context === 'string' && RETHROWN_ERROR_CONTEXTS.has(context)) return;
    this.write('error', message, params, true);
  }
  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }
  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }
  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }
  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params, true);
  }

  private write(level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace', message: unknown, params: unknown[], mayHaveStack = false): void {
    if (!this.pino.isLevelEnabled(level)) return;
    const rest = [...params];
    let context: string | undefined;
    let stack: string | undefined;
    // Nest appends the logger's context as the last string argument.
    if (rest.length > 0 && typeof rest[rest.length - 1] === 'string') {
      const last = rest[rest.length - 1] as string;
      if (!(mayHaveStack && rest.length === 1 && STACK_RE.test(last))) {
        context = last;
        rest.pop();
      }
    }
    if (mayHaveStack && rest.length > 0 && (typeof rest[0] === 'string' || rest[0] === undefined)) {
      stack = rest.shift() as string | undefined;
    }
    const fields: Record<string, unknown> = { ...contextFields() };
    if (context) fields.context = context;
    if (stack) fields.stack = stack;
    let msg: string;
    if (message instanceof Error) {
      msg = message.message;
      fields.stack ??= message.stack;
    } else if (message && typeof message === 'object') {
      Object.assign(fields, message);
      msg = typeof (message as { msg?: unknown }).msg === 'string' ? String((message as { msg: string }).msg) : '';
    } else {
      msg = String(message);
    }
    this.pino[level](fields, msg);
  }
}
