import { DeltaBuffer } from './delta-buffer';

describe('DeltaBuffer', () => {
  it('coalesces many small deltas into few writes whose concatenation is exact', async () => {
    const writes: string[] = [];
    const buf = new DeltaBuffer(async (t) => {
      writes.push(t);
    }, 64, 1000);
    const text = 'abcd'.repeat(100);
    for (let i = 0; i < text.length; i += 4) await buf.push(text.slice(i, i + 4));
    await buf.drain();
    expect(writes.join('')).toBe(text);
    expect(writes.length).toBeLessThanOrEqual(Math.ceil(text.length / 64));
  });

  it('flushes after the delay even without more input', async () => {
    const writes: string[] = [];
    const buf = new DeltaBuffer(async (t) => {
      writes.push(t);
    }, 4096, 20);
    await buf.push('hi');
    expect(writes).toEqual([]);
    await new Promise((r) => setTimeout(r, 60));
    expect(writes).toEqual(['hi']);
  });

  it('takeRest waits for scheduled writes and returns the unwritten tail instead of writing it', async () => {
    const writes: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const buf = new DeltaBuffer(async (t) => {
      await gate;
      writes.push(t);
    }, 8, 20);
    void buf.push('abcdefgh'); // reaches maxBytes: a write is scheduled (held by the gate)
    await buf.push('ij');
    const rest = buf.takeRest();
    setTimeout(release, 10);
    await expect(rest).resolves.toBe('ij');
    expect(writes).toEqual(['abcdefgh']);
    await new Promise((r) => setTimeout(r, 60)); // the delay timer was cancelled: nothing more
    expect(writes).toEqual(['abcdefgh']);
    await expect(buf.takeRest()).resolves.toBe('');
  });

  it('surfaces a failed write on the next push or drain', async () => {
    const buf = new DeltaBuffer(async () => {
      throw new Error('boom');
    }, 1, 1000);
    await expect(buf.push('x')).rejects.toThrow('boom');
    await expect(buf.drain()).rejects.toThrow('boom');
  });
});
