import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Client } from 'pg';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { decodeNotification, encodeNotification, EventNotification, Notifier, NotifierState } from '../domain/notifier';

export const NOTIFY_CHANNEL = 'run_events';
const BACKOFF_MIN_MS = 100;
const BACKOFF_MAX_MS = 5000;
/** Notifications sent by one statement at most (each payload is ~80 bytes; PostgreSQL allows 8,000). */
const BATCH_MAX = 500;
/** Presence payloads on the same channel (never a valid event notification, which has 4-5 fields). */
const HELLO = 'hello';
const HERE = 'here';

export interface PgNotifierOptions {
  /** How often subscribers re-read anyway (a writer that died between its commit and its notification). */
  safetyPollMs: number;
  /** How often this node says it is listening (`here`); a peer silent for 3 of these is gone. Default 5,000. */
  presenceMs?: number;
}

/**
 * Cluster notifier on PostgreSQL LISTEN/NOTIFY. Each node keeps ONE dedicated connection (outside
 * the pool, so it also works behind a transaction-mode pooler when pointed at the server
 * directly): it LISTENs, and it sends this node's notifications.
 *
 * `announce` sends nothing inside the writing transaction: PostgreSQL serialises every committing
 * transaction that has notified on one lock, held through the commit's WAL flush, so notifying
 * commits could not share a flush and queued behind each other (bench/README.md, session 10: B1
 * 50 clients +60-90 % runs/s once the notification left the commit). After the commit, the
 * notification joins a queue that the dedicated connection sends in one `pg_notify` statement per
 * batch (whatever queued while the previous batch was on the wire), with `synchronous_commit =
 * off` (a notification needs no durable commit of its own), so the notify lock is held for
 * microseconds, once per batch.
 *
 * This node's own subscribers are told in-process after the commit, and nothing is sent while no
 * other node listens: a single node's notifications only came back to itself, yet each batch cost
 * a round trip and a statement (B1 50 clients: 2.9 per run). Nodes find each other on the channel: a node that
 * connects says `hello`, every listener answers `here`, and each says `here` again every
 * `presenceMs`; a peer not heard from for three of those is gone. A node that joins is therefore
 * told of the others' commits from the moment its `hello` arrives (before it serves any stream).
 *
 * Like NATS, this is at-most-once for other nodes, which costs latency, never an event
 * (subscribers read the rows by cursor): a writer that dies between its commit and the send, or a
 * batch sent while the connection is down, reaches other nodes' streams at their next
 * `safetyPollMs` re-read. When the connection drops it reconnects with exponential backoff and
 * then tells subscribers to re-read, so nothing committed in between is missed.
 */
@Injectable()
export class PgNotifier extends Notifier implements OnModuleInit, OnApplicationShutdown {
  protected readonly logger = new Logger('PgNotifier');
  private client: Client | null = null;
  private stopped = false;
  private backoffMs = BACKOFF_MIN_MS;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private connecting: Promise<void> | null = null;
  private hadConnection = false;
  /** Encoded notifications committed and not sent yet. */
  private queue: string[] = [];
  private sending: Promise<void> | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private presenceTimer: NodeJS.Timeout | null = null;
  /** When another node's LISTEN connection was last heard (its `hello`/`here`), by its backend pid. */
  private readonly peers = new Map<number, number>();
  /** Statements that carried notifications (tests: a burst goes in a few). */
  batchesSent = 0;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly url: string,
    private readonly options: PgNotifierOptions = { safetyPollMs: 5_000 },
  ) {
    super();
  }

  async onModuleInit(): Promise<void> {
    await this.connect();
    if (this.options.safetyPollMs > 0) {
      this.pollTimer = setInterval(() => this.emit((l) => l.onResync()), this.options.safetyPollMs);
      this.pollTimer.unref();
    }
    this.presenceTimer = setInterval(() => this.sayPresence(HERE), this.presenceMs);
    this.presenceTimer.unref();
  }

  private get presenceMs(): number {
    return this.options.presenceMs ?? 5_000;
  }

  /** Whether another node listens (heard within three presence periods); nothing is sent otherwise. */
  get hasPeers(): boolean {
    const since = Date.now() - 3 * this.presenceMs;
    for (const [pid, at] of this.peers) if (at < since) this.peers.delete(pid);
    return this.peers.size > 0;
  }

  private sayPresence(what: typeof HELLO | typeof HERE): void {
    const c = this.client;
    if (!c) return;
    c.query(`SELECT pg_notify($1, $2)`, [NOTIFY_CHANNEL, what]).catch((err: Error) => this.logger.warn(`presence (${what}) failed: ${err.message}`));
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.presenceTimer) clearInterval(this.presenceTimer);
    // What this node committed last still reaches the others (a graceful stop loses nothing).
    await this.flushed();
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const c = this.client;
    this.client = null;
    if (c) await c.end().catch(() => undefined);
  }

  async announce(n: EventNotification): Promise<void> {
    this.uow.afterCommit(() => {
      // This node's subscribers are told in-process (what this connection sends comes back to it
      // and is ignored); the other nodes over the channel, when there are any.
      this.emit((l) => l.onEvents(n));
      this.enqueue(encodeNotification(n));
    });
  }

  /** Resolves once every notification queued so far has been sent (or dropped). */
  async flushed(): Promise<void> {
    while (this.sending) await this.sending;
  }

  private enqueue(payload: string): void {
    if (!this.hasPeers) return; // nobody else listens
    this.queue.push(payload);
    if (!this.sending) this.sending = this.send().finally(() => (this.sending = null));
  }

  /** Sends the queue in batches until it is empty; the next batch is what queued meanwhile. */
  private async send(): Promise<void> {
    // Let the current burst of commits (this tick's) join the first batch.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, BATCH_MAX);
      const c = this.client;
      if (!c) continue; // connection down: other nodes re-read after it is back (onResync there) or at their safety poll
      try {
        await c.query(`SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, [NOTIFY_CHANNEL, batch]);
        this.batchesSent++;
      } catch (err) {
        this.logger.warn(`sending ${batch.length} notification(s) failed: ${(err as Error).message}`);
      }
    }
  }

  /** True while the LISTEN connection is up (for tests and readiness). */
  get connected(): boolean {
    return this.client !== null;
  }

  state(): NotifierState {
    // While the LISTEN connection is down, streams wait for the resync that follows its return.
    return { kind: 'postgres', connected: this.connected, degraded: false };
  }

  /** Drops the LISTEN connection as a network failure would (tests). */
  simulateConnectionLoss(): void {
    this.client?.emit('error', new Error('simulated connection loss'));
  }

  private connect(): Promise<void> {
    if (this.connecting) return this.connecting;
    this.connecting = this.doConnect().finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async doConnect(): Promise<void> {
    if (this.stopped) return;
    const client = new Client({ connectionString: this.url, application_name: 'agent-api-listen' });
    let failed = false;
    const onLost = (err?: Error) => {
      if (failed) return;
      failed = true;
      if (this.client === client) this.client = null;
      client.removeAllListeners('notification');
      void client.end().catch(() => undefined);
      if (!this.stopped) {
        this.logger.warn(`LISTEN connection lost${err ? `: ${err.message}` : ''}; reconnecting`);
        this.scheduleReconnect();
      }
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    client.on('notification', (msg) => {
      if (msg.channel !== NOTIFY_CHANNEL || !msg.payload) return;
      // Our own batches and presence: this node's subscribers were told when it committed.
      if (msg.processId === (client as unknown as { processID: number | null }).processID) return;
      if (msg.payload === HELLO || msg.payload === HERE) {
        this.peers.set(msg.processId, Date.now());
        if (msg.payload === HELLO) this.sayPresence(HERE);
        return;
      }
      const n = decodeNotification(msg.payload);
      if (n) this.emit((l) => l.onEvents(n));
    });
    try {
      await client.connect();
      // Only this connection's own transactions (the notification batches): they need no WAL flush.
      await client.query(`SET synchronous_commit TO off`);
      await client.query(`LISTEN ${NOTIFY_CHANNEL}`);
    } catch (err) {
      onLost(err as Error);
      return;
    }
    if (failed || this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    const wasReconnect = this.backoffMs !== BACKOFF_MIN_MS || this.hadConnection;
    this.client = client;
    this.hadConnection = true;
    this.backoffMs = BACKOFF_MIN_MS;
    // Listening now: the others start telling this node (and answer, so it knows them).
    this.sayPresence(HELLO);
    if (wasReconnect) {
      this.logger.log('LISTEN connection restored');
      this.emit((l) => l.onResync());
    }
  }

  private scheduleReconnect(): void {
    if (this.reconnectTimer || this.stopped) return;
    const delay = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, BACKOFF_MAX_MS);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      void this.connect();
    }, delay);
    this.reconnectTimer.unref();
  }
}
