/**
 * Coalesces model deltas: text is flushed when `maxBytes` are buffered or `maxDelayMs` after the
 * first unflushed delta, whichever comes first, so a long answer is a few dozen writes rather
 * than thousands, while the concatenation of flushed deltas stays exactly the model's text.
 * Flushes are serialised; `drain()` flushes the rest and waits for every write.
 */
export class DeltaBuffer {
  private buffer = '';
  private timer: NodeJS.Timeout | null = null;
  private chain: Promise<void> = Promise.resolve();
  private failure: unknown = null;

  constructor(
    private readonly write: (text: string) => Promise<void>,
    private readonly maxBytes = 4096,
    private readonly maxDelayMs = 50,
  ) {}

  push(text: string): Promise<void> | void {
    if (this.failure) throw this.failure;
    if (!text) return;
    this.buffer += text;
    if (Buffer.byteLength(this.buffer, 'utf8') >= this.maxBytes) return this.flush();
    if (!this.timer) {
      this.timer = setTimeout(() => void this.flush().catch(() => undefined), this.maxDelayMs);
    }
  }

  /** Schedules a write of what is buffered; resolves when it (and every earlier write) is done. */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const text = this.buffer;
    this.buffer = '';
    if (text) {
      this.chain = this.chain.then(() => (this.failure ? undefined : this.write(text))).catch((err) => {
        this.failure = err;
      });
    }
    return this.chain.then(() => {
      if (this.failure) throw this.failure;
    });
  }

  async drain(): Promise<void> {
    await this.flush();
  }

  /**
   * Waits for the writes already scheduled, then hands back what is still buffered instead of
   * writing it (the caller writes it with the message's completion, one transaction fewer).
   */
  async takeRest(): Promise<string> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    await this.chain;
    if (this.failure) throw this.failure;
    const rest = this.buffer;
    this.buffer = '';
    return rest;
  }

  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.buffer = '';
  }
}
