import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Client } from 'pg';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { decodeNotification, encodeNotification, EventNotification, Notifier, NotifierState } from '../domain/notifier';

export const NOTIFY_CHANNEL = 'run_events';
const BACKOFF_MIN_MS = 100;
const BACKOFF_MAX_MS = 5000;

/**
 * Cluster notifier on PostgreSQL LISTEN/NOTIFY. `announce` runs `pg_notify` inside the writing
 * transaction (PostgreSQL delivers it at commit, to every node). Each node keeps ONE dedicated
 * LISTEN connection (outside the pool, so it also works behind a transaction-mode pooler when
 * pointed at the server directly); when it drops, it reconnects with exponential backoff and then
 * tells subscribers to re-read, so nothing committed in between is missed.
 */
@Injectable()
export class PgNotifier extends Notifier implements OnModuleInit, OnApplicationShutdown {
  protected readonly logger = new Logger('PgNotifier');
  override readonly inlineChannel = NOTIFY_CHANNEL;
  private client: Client | null = null;
  private stopped = false;
  private backoffMs = BACKOFF_MIN_MS;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private connecting: Promise<void> | null = null;
  private hadConnection = false;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly url: string,
  ) {
    super();
  }

  async onModuleInit(): Promise<void> {
    await this.connect();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const c = this.client;
    this.client = null;
    if (c) await c.end().catch(() => undefined);
  }

  async announce(n: EventNotification): Promise<void> {
    await this.uow.manager.query(`SELECT pg_notify($1, $2)`, [NOTIFY_CHANNEL, encodeNotification(n)]);
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
      const n = decodeNotification(msg.payload);
      if (n) this.emit((l) => l.onEvents(n));
    });
    try {
      await client.connect();
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
