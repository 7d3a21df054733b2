import { BackgroundSlices } from './background-slices';

/** Counts turns of the event loop: one increment per check phase while it runs. */
function loopTurns() {
  let turn = 0;
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    turn++;
    setImmediate(tick);
  };
  setImmediate(tick);
  return { now: () => turn, stop: () => (stopped = true) };
}

const busy = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

describe('BackgroundSlices', () => {
  it('runs every deferred job, in order, after the code that deferred it', async () => {
    const slices = new BackgroundSlices(1);
    const order: string[] = [];
    const done = new Promise<void>((resolve) => {
      for (let i = 0; i < 5; i++) slices.defer(() => order.push(`job ${i}`));
      slices.defer(resolve);
    });
    order.push('deferring code');
    await done;
    expect(order).toEqual(['deferring code', 'job 0', 'job 1', 'job 2', 'job 3', 'job 4']);
  });

  it('moves the jobs past a spent slice to later turns of the loop (never all at once), and still runs them all', async () => {
    const slices = new BackgroundSlices(1);
    const turns = loopTurns();
    const ranAt: number[] = [];
    await new Promise<void>((resolve) => {
      for (let i = 0; i < 4; i++) {
        slices.defer(() => {
          ranAt.push(turns.now());
          busy(3); // each job spends the whole slice
          if (ranAt.length === 4) resolve();
        });
      }
    });
    turns.stop();
    expect(ranAt).toHaveLength(4);
    for (let i = 1; i < 4; i++) expect(ranAt[i]).toBeGreaterThan(ranAt[i - 1]);
  });

  it('runs cheap jobs in the same turn while the slice lasts', async () => {
    const slices = new BackgroundSlices(50);
    const turns = loopTurns();
    const ranAt: number[] = [];
    await new Promise<void>((resolve) => {
      for (let i = 0; i < 10; i++) slices.defer(() => ranAt.push(turns.now()) === 10 && resolve());
    });
    turns.stop();
    expect(new Set(ranAt).size).toBe(1);
  });

  it('settle() hands over the value or the error of the promise, within a slice', async () => {
    const slices = new BackgroundSlices(1);
    await expect(slices.settle(Promise.resolve(42))).resolves.toBe(42);
    const err = new Error('query failed');
    await expect(slices.settle(Promise.reject(err))).rejects.toBe(err);
  });
});
