import { endsExchange, PGliteLike, PGliteQueryQueue } from './pglite-query-queue';

function msg(type: string, payload = ''): Uint8Array {
  const body = Buffer.from(payload, 'utf8');
  const b = Buffer.alloc(5 + body.length);
  b.write(type, 0, 'latin1');
  b.writeInt32BE(4 + body.length, 1);
  body.copy(b, 5);
  return new Uint8Array(b);
}

function startup(): Uint8Array {
  const b = Buffer.alloc(8);
  b.writeInt32BE(8, 0);
  b.writeInt32BE(196608, 4);
  return new Uint8Array(b);
}

/** A fake backend that records the order it executed messages in and tracks BEGIN/COMMIT. */
class FakeDb implements PGliteLike {
  readonly log: string[] = [];
  inTx = false;
  failOn: string | null = null;

  async runExclusive<T>(fn: () => Promise<T>): Promise<T> {
    return fn();
  }
  async execProtocolRawStream(message: Uint8Array, opts: { onRawData: (d: Uint8Array) => void }): Promise<void> {
    const text = Buffer.from(message).toString('latin1');
    const type = text[0];
    const payload = text.slice(5).replace(/\0$/, '');
    await new Promise((r) => setImmediate(r));
    if (this.failOn && payload === this.failOn) throw new Error('boom');
    if (type === 'Q' && /^BEGIN/i.test(payload)) this.inTx = true;
    if (type === 'Q' && /^(COMMIT|ROLLBACK)/i.test(payload)) this.inTx = false;
    this.log.push(`${type}:${payload}`);
    opts.onRawData(Uint8Array.of(1));
  }
  isInTransaction(): boolean {
    return this.inTx;
  }
}

/** What the socket handler does: send one connection's messages one after the other. */
async function client(q: PGliteQueryQueue, id: number, messages: Uint8Array[]): Promise<void> {
  for (const m of messages) await q.enqueue(id, m, () => undefined);
}

describe('endsExchange', () => {
  it('is true for Sync, Query, Terminate and the startup message', () => {
    expect(endsExchange(msg('S'))).toBe(true);
    expect(endsExchange(msg('Q', 'SELECT 1'))).toBe(true);
    expect(endsExchange(msg('X'))).toBe(true);
    expect(endsExchange(startup())).toBe(true);
  });
  it('is false for the other extended-protocol messages', () => {
    for (const t of ['P', 'B', 'D', 'E', 'H', 'C']) expect(endsExchange(msg(t, 'x'))).toBe(false);
  });
});

describe('PGliteQueryQueue', () => {
  it('keeps each connection\'s Parse/Bind/Execute/Sync together when two connections send at once', async () => {
    const db = new FakeDb();
    const q = new PGliteQueryQueue(db);
    const exchange = (tag: string) => [msg('P', tag), msg('B', tag), msg('E', tag), msg('S', tag)];
    await Promise.all([client(q, 1, exchange('a')), client(q, 2, exchange('b')), client(q, 3, exchange('c'))]);
    expect(db.log).toHaveLength(12);
    for (let i = 0; i < 12; i += 4) {
      const tags = db.log.slice(i, i + 4).map((l) => l.split(':')[1]);
      expect(new Set(tags).size).toBe(1);
      expect(db.log.slice(i, i + 4).map((l) => l[0])).toEqual(['P', 'B', 'E', 'S']);
    }
    expect(q.currentOwner).toBeNull();
  });

  it('keeps the backend for a connection while its transaction is open', async () => {
    const db = new FakeDb();
    const q = new PGliteQueryQueue(db);
    await Promise.all([
      client(q, 1, [msg('Q', 'BEGIN'), msg('P', 'tx1'), msg('S', 'tx1'), msg('P', 'tx2'), msg('S', 'tx2'), msg('Q', 'COMMIT')]),
      (async () => {
        await new Promise((r) => setImmediate(r));
        await client(q, 2, [msg('Q', 'other')]);
      })(),
    ]);
    const begin = db.log.indexOf('Q:BEGIN');
    const commit = db.log.indexOf('Q:COMMIT');
    const other = db.log.indexOf('Q:other');
    expect(commit - begin).toBe(5);
    expect(other).toBeGreaterThan(commit);
  });

  it('a failing message rejects its caller and does not stall the queue', async () => {
    const db = new FakeDb();
    db.failOn = 'bad';
    const q = new PGliteQueryQueue(db);
    await expect(q.enqueue(1, msg('Q', 'bad'), () => undefined)).rejects.toThrow('boom');
    await expect(q.enqueue(2, msg('Q', 'good'), () => undefined)).resolves.toBe(1);
    expect(db.log).toEqual(['Q:good']);
  });

  it('a connection that disconnects mid-transaction is synced and rolled back, and others proceed', async () => {
    const db = new FakeDb();
    const q = new PGliteQueryQueue(db);
    await client(q, 1, [msg('Q', 'BEGIN'), msg('P', 'half')]);
    expect(q.currentOwner).toBe(1);
    const waiting = client(q, 2, [msg('Q', 'after')]);
    await new Promise((r) => setTimeout(r, 5));
    expect(db.log).not.toContain('Q:after');
    q.clearQueueForHandler(1);
    await q.clearTransactionIfNeeded(1);
    await waiting;
    expect(db.log).toEqual(['Q:BEGIN', 'P:half', 'S:', 'Q:ROLLBACK', 'Q:after']);
    expect(db.inTx).toBe(false);
    expect(q.currentOwner).toBeNull();
  });

  it('clearQueueForHandler rejects the queued messages of that connection only', async () => {
    const db = new FakeDb();
    const q = new PGliteQueryQueue(db);
    await client(q, 1, [msg('Q', 'BEGIN')]);
    const pending2 = q.enqueue(2, msg('Q', 'two'), () => undefined);
    const pending3 = q.enqueue(3, msg('Q', 'three'), () => undefined);
    q.clearQueueForHandler(3);
    await expect(pending3).rejects.toThrow('Handler disconnected');
    await client(q, 1, [msg('Q', 'COMMIT')]);
    await expect(pending2).resolves.toBe(1);
    expect(q.getQueueLength()).toBe(0);
  });
});
