import { AsyncLocalStorage } from 'node:async_hooks';

/** What every log line written inside a request or a run execution carries. */
export interface LogContext {
  requestId?: string;
  runId?: string;
}

const storage = new AsyncLocalStorage<LogContext>();

/** The ambient log context (request id, run id), if any. */
export function currentLogContext(): LogContext | undefined {
  return storage.getStore();
}

/** Runs `fn` with `ctx` merged over the ambient context; everything it starts inherits it. */
export function withLogContext<T>(ctx: LogContext, fn: () => T): T {
  return storage.run({ ...storage.getStore(), ...ctx }, fn);
}
