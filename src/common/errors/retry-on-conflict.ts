import { ConcurrencyConflict } from './domain-error';

export interface RetryOnConflictOptions {
  /** Tries in all (the first included); the last conflict is thrown. */
  attempts: number;
  /** Which conflicts are retried (default: all); others are thrown at once. */
  retries?: (conflict: ConcurrencyConflict) => boolean;
}

/**
 * Runs `attempt` again while it fails with a ConcurrencyConflict (another writer committed
 * between its read and its guarded write): each try reads again and decides again. The one
 * helper for optimistic retries (DESIGN: one helper per repeated mechanism).
 */
export async function retryOnConflict<T>(attempt: (n: number) => Promise<T>, options: RetryOnConflictOptions): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (err) {
      if (!(err instanceof ConcurrencyConflict) || n >= options.attempts || (options.retries && !options.retries(err))) throw err;
    }
  }
}
