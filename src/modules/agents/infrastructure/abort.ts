/** Raised by the helpers below when their signal aborts. */
export class AbortedError extends Error {
  constructor(readonly reason: 'aborted' | 'deadline') {
    super(reason === 'deadline' ? 'deadline passed' : 'aborted');
    this.name = 'AbortedError';
  }
}

/**
 * A signal that aborts when `parent` aborts or `deadline` (epoch ms) passes, whichever is first.
 * `dispose()` clears the timer (call it when the guarded work is done).
 */
export function withDeadline(parent: AbortSignal, deadline: number): { signal: AbortSignal; deadlineHit: () => boolean; dispose: () => void } {
  const controller = new AbortController();
  let hit = false;
  const onAbort = () => controller.abort(parent.reason);
  if (parent.aborted) controller.abort(parent.reason);
  else parent.addEventListener('abort', onAbort, { once: true });
  const remaining = deadline - Date.now();
  let timer: NodeJS.Timeout | undefined;
  if (remaining <= 0) {
    hit = true;
    controller.abort(new AbortedError('deadline'));
  } else if (Number.isFinite(remaining)) {
    timer = setTimeout(() => {
      hit = true;
      controller.abort(new AbortedError('deadline'));
    }, Math.min(remaining, 2_147_000_000));
    timer.unref?.();
  }
  return {
    signal: controller.signal,
    deadlineHit: () => hit || Date.now() >= deadline,
    dispose: () => {
      if (timer) clearTimeout(timer);
      parent.removeEventListener('abort', onAbort);
    },
  };
}

/** Waits `ms`; rejects with AbortedError as soon as `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(new AbortedError('aborted'));
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AbortedError('aborted'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Settles with `work`, or rejects with AbortedError when `signal` aborts first. */
export function raceAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(new AbortedError('aborted'));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new AbortedError('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

export { estimateTokens } from '../domain/model-provider';
