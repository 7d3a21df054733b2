import type { PGlite } from '@electric-sql/pglite';

/** The subset of PGlite the queue uses (a fake in unit tests). */
export type PGliteLike = Pick<PGlite, 'runExclusive' | 'execProtocolRawStream' | 'isInTransaction'>;

interface QueuedMessage {
  handlerId: number;
  message: Uint8Array;
  onData: (data: Uint8Array) => void;
  resolve: (bytes: number) => void;
  reject: (err: Error) => void;
}

const PROTOCOL_V3 = 196608;
const SYNC = Uint8Array.of(0x53, 0, 0, 0, 4);
const ROLLBACK_QUERY = (() => {
  const sql = Buffer.from('ROLLBACK\0', 'utf8');
  const msg = Buffer.alloc(5 + sql.length);
  msg.writeUInt8(0x51, 0);
  msg.writeInt32BE(4 + sql.length, 1);
  sql.copy(msg, 5);
  return new Uint8Array(msg);
})();

/** True for frontend messages after which the backend answers ReadyForQuery. */
export function endsExchange(message: Uint8Array): boolean {
  if (message.length >= 8 && Buffer.from(message.buffer, message.byteOffset, message.byteLength).readInt32BE(4) === PROTOCOL_V3) {
    return true; // startup
  }
  const type = message[0];
  return type === 0x53 /* Sync */ || type === 0x51 /* Query */ || type === 0x58 /* Terminate */;
}

/**
 * Replacement for pglite-socket's internal query queue (v0.2.17), which schedules single
 * protocol messages across connections and pins a connection only while an SQL transaction
 * is open. The pg driver sends every parameterised query as Parse/Bind/Describe/Execute/Sync,
 * so two pooled connections interleaved their messages on PGlite's one backend: "unnamed
 * prepared statement does not exist", or another query's rows (electric-sql/pglite#1046).
 *
 * Here a connection owns the backend from its first message until the backend is ready for
 * a new query outside a transaction (after Sync/Query with no open transaction); others wait.
 * A failing message does not stall the queue, and a connection that goes away while owning
 * the backend has its exchange synced and its transaction rolled back.
 */
export class PGliteQueryQueue {
  private queue: QueuedMessage[] = [];
  private owner: number | null = null;
  private processing = false;

  constructor(private readonly db: PGliteLike) {}

  enqueue(handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      this.queue.push({ handlerId, message, onData, resolve, reject });
      void this.process();
    });
  }

  getQueueLength(): number {
    return this.queue.length;
  }

  /** The connection that currently owns the backend, if any. */
  get currentOwner(): number | null {
    return this.owner;
  }

  clearQueueForHandler(handlerId: number): void {
    this.queue = this.queue.filter((q) => {
      if (q.handlerId !== handlerId) return true;
      q.reject(new Error('Handler disconnected'));
      return false;
    });
  }

  async clearTransactionIfNeeded(handlerId: number): Promise<void> {
    if (this.owner !== handlerId) return;
    const noop = () => undefined;
    await this.enqueue(handlerId, SYNC, noop).catch(noop);
    if (this.owner === handlerId) await this.enqueue(handlerId, ROLLBACK_QUERY, noop).catch(noop);
    if (this.owner === handlerId) {
      this.owner = null;
      void this.process();
    }
  }

  private next(): QueuedMessage | undefined {
    if (this.owner === null) return this.queue.shift();
    const i = this.queue.findIndex((q) => q.handlerId === this.owner);
    return i === -1 ? undefined : this.queue.splice(i, 1)[0];
  }

  private ownerAfter(item: QueuedMessage): number | null {
    return endsExchange(item.message) && !this.db.isInTransaction() ? null : item.handlerId;
  }

  private async process(): Promise<void> {
    if (this.processing) return;
    this.processing = true;
    try {
      for (let item = this.next(); item; item = this.next()) {
        const current = item;
        let bytes = 0;
        try {
          await this.db.runExclusive(() =>
            this.db.execProtocolRawStream(current.message, {
              onRawData: (data: Uint8Array) => {
                bytes += data.length;
                current.onData(data);
              },
            }),
          );
        } catch (err) {
          this.owner = this.ownerAfter(current);
          current.reject(err as Error);
          continue;
        }
        this.owner = this.ownerAfter(current);
        current.resolve(bytes);
      }
    } finally {
      this.processing = false;
    }
  }
}
