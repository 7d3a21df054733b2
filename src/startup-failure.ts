import { shownUrl } from './common/config/app-config';

/** What a start-up failure line may name about the configuration. */
export interface StartupFailureContext {
  host: string;
  port: number;
  databaseUrl: string | null;
}

/** Error codes of a database that cannot be reached or refuses the login (node's and PostgreSQL's). */
const DATABASE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ECONNRESET', '28P01', '28000', '3D000']);

/**
 * The one line main.ts prints when the service cannot start (after the configuration was read):
 * what failed and what to do, never a stack. A port in use, a port or address that cannot be
 * listened on and a database that cannot be reached are named as such; anything else is its message.
 */
export function startupFailureLine(err: unknown, ctx: StartupFailureContext | null): string {
  const e = (err ?? {}) as NodeJS.ErrnoException & { address?: string; port?: number };
  const message = err instanceof Error ? (err.name && err.name !== 'Error' ? `${err.name}: ${err.message}` : err.message) : String(err);
  let line: string;
  const where = ctx ? `${ctx.host.includes(':') ? `[${ctx.host}]` : ctx.host}:${ctx.port}` : `${e.address ?? '?'}:${e.port ?? '?'}`;
  if (e.code === 'EADDRINUSE' && e.syscall === 'listen') {
    line = `${where} is already in use (PORT=${ctx?.port ?? e.port}): stop the process that listens there, or set another PORT`;
  } else if ((e.code === 'EACCES' || e.code === 'EPERM') && e.syscall === 'listen') {
    line = `cannot listen on ${where}: permission denied (ports below 1024 need privileges): set PORT to 1024 or above`;
  } else if (e.code === 'EADDRNOTAVAIL' && e.syscall === 'listen') {
    line = `cannot listen on ${where}: HOST=${JSON.stringify(ctx?.host ?? e.address)} is not an address of this machine: unset HOST, or set an address this machine has`;
  } else if (ctx?.databaseUrl && e.code && DATABASE_CODES.has(e.code)) {
    line = `cannot connect to the database DATABASE_URL=${shownUrl(ctx.databaseUrl)}: ${message}`;
  } else {
    line = message;
  }
  return `agent-api could not start: ${line}`.replace(/\s*[\r\n]+\s*/g, ' ');
}
