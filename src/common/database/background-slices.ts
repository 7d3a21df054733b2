import { performance } from 'node:perf_hooks';

/**
 * Runs the continuations of background work in bounded slices of the event loop, so that
 * requests are not held up behind it when the process is busy.
 *
 * Node runs every ready callback of a loop iteration in arrival order: under a closed loop of
 * clients, a request's next step (its database result) waited behind the continuations of every
 * executing run that became ready in the same iteration (B1, 50 clients: event-loop delay ~8 ms
 * at p50, ~30 ms at p99, for every round trip of a request). Here a background continuation is not run where its result arrives
 * (the poll phase) but in the check phase (`setImmediate`), one immediate per continuation, at
 * most `sliceMs` of them per iteration; the rest move to the next iteration, in order. Requests
 * (poll phase) then wait for one slice at most, and background work still gets every iteration's
 * slice: it is slowed while requests are in flight, never stopped.
 *
 * A marker immediate queued ahead of each iteration's first continuation starts the slice's clock
 * (immediates queued during a check phase run in the next one, in order, after the marker).
 */
export class BackgroundSlices {
  private sliceStart = 0;
  private markerQueued = false;
  private readonly startSlice = (): void => {
    this.markerQueued = false;
    this.sliceStart = performance.now();
  };

  constructor(private readonly sliceMs: number) {}

  /** Runs `job` in a check phase of this or a later iteration, within the slice budget. */
  defer(job: () => void): void {
    this.queueMarker();
    setImmediate(this.runner(job));
  }

  /** `promise`'s outcome, delivered to its continuation within a slice. */
  settle<T>(promise: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) =>
      promise.then(
        (v) => this.defer(() => resolve(v)),
        (e) => this.defer(() => reject(e)),
      ),
    );
  }

  private runner(job: () => void): () => void {
    const run = (): void => {
      if (performance.now() - this.sliceStart > this.sliceMs) {
        // This iteration's slice is spent: next iteration, behind its marker.
        this.queueMarker();
        setImmediate(run);
        return;
      }
      job();
    };
    return run;
  }

  private queueMarker(): void {
    if (this.markerQueued) return;
    this.markerQueued = true;
    setImmediate(this.startSlice);
  }
}

