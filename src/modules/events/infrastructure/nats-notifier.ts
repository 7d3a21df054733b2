import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
// The client's own declarations name these through a subpath export that node10 resolution cannot see.
import type { Msg, NatsConnection, Status, Subscription } from '@nats-io/nats-core';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { Metrics } from '../../../common/metrics/metrics';
import { decodeNotification, encodeNotification, EventNotification, Notifier, NotifierState } from '../domain/notifier';

export interface NatsNotifierOptions {
  /** One URL or a comma-separated list (a cluster). */
  url: string;
  subject: string;
  /** While NATS is unreachable: how often subscribers re-read the database. */
  degradedPollMs: number;
  /** While NATS is up: how often subscribers re-read anyway (a writer that died between its commit and its publish). */
  safetyPollMs: number;
  /** Tells other nodes apart from this one on the wire (this node's own messages are not echoed). */
  nodeId: string;
}

/**
 * Cluster notifier on core NATS: PostgreSQL stays the only store, NATS carries only "rows were
 * committed" (ids and sequences). `announce` publishes AFTER the writing transaction commits, so
 * a subscriber always finds the rows, and never on rollback; this node's own subscribers are told
 * in-process at the same moment (NATS does not echo them back). No pg_notify: the commits of the
 * cluster no longer queue on PostgreSQL's notify lock.
 *
 * Core NATS is at-most-once, which is enough because a lost message costs latency, never an
 * event: subscribers read the rows themselves, by cursor. While NATS is unreachable the notifier
 * asks subscribers to re-read (`onResync`) every `degradedPollMs` - streams slow down, nothing is
 * lost or repeated (the hub filters by cursor) - and once more after reconnecting (messages
 * published while this node was away never reach it). A slow `safetyPollMs` re-read covers a
 * writer that died between its commit and its publish. JetStream is not needed: it would store
 * what PostgreSQL already stores.
 */
@Injectable()
export class NatsNotifier extends Notifier implements OnModuleInit, OnApplicationShutdown {
  protected readonly logger = new Logger('NatsNotifier');
  private nc: NatsConnection | null = null;
  private sub: Subscription | null = null;
  private up = false;
  private stopped = false;
  private pollTimer: NodeJS.Timeout | null = null;
  private pollEveryMs = 0;
  private readonly encoder = new TextEncoder();
  private readonly decoder = new TextDecoder();

  constructor(
    private readonly uow: UnitOfWork,
    private readonly options: NatsNotifierOptions,
    private readonly metrics?: Metrics,
  ) {
    super();
  }

  onModuleInit(): void {
    // Degraded (polling) until the first connection: a node starts and serves without NATS.
    this.setUp(false);
    void this.start();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    this.setPoll(0);
    const nc = this.nc;
    this.nc = null;
    if (nc) await nc.close().catch(() => undefined);
  }

  async announce(n: EventNotification): Promise<void> {
    this.uow.afterCommit(() => this.publish(n));
  }

  override state(): NotifierState {
    return { kind: 'nats', connected: this.up, degraded: !this.up };
  }

  private publish(n: EventNotification): void {
    // This node's subscribers first, in-process (they never wait for NATS).
    this.emit((l) => l.onEvents(n));
    const nc = this.nc;
    if (!nc || nc.isClosed()) return; // other nodes are polling meanwhile
    try {
      nc.publish(this.options.subject, this.encoder.encode(encodeNotification(n)));
    } catch (err) {
      // Other nodes find the rows by polling (degraded) or by their safety re-read.
      this.logger.warn(`publish failed: ${(err as Error).message}`);
    }
  }

  private async start(): Promise<void> {
    try {
      // Loaded here, not at start-up: a node without NATS_URL never needs the client (~40 ms, ~10 MiB).
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { connect } = require('@nats-io/transport-node') as typeof import('@nats-io/transport-node');
      const nc: NatsConnection = await connect({
        servers: this.options.url.split(',').map((u) => u.trim()),
        name: `agent-api:${this.options.nodeId}`,
        noEcho: true,
        waitOnFirstConnect: true,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 250,
        pingInterval: 5_000,
        maxPingOut: 2,
      });
      if (this.stopped) {
        await nc.close();
        return;
      }
      this.nc = nc;
      this.sub = nc.subscribe(this.options.subject, {
        callback: (err: Error | null, msg: Msg) => {
          if (err) return;
          const n = decodeNotification(this.decoder.decode(msg.data));
          if (n) this.emit((l) => l.onEvents(n));
        },
      });
      void this.watch(nc);
      await nc.flush(); // the server has our subscription: what is committed from now on reaches us
      this.logger.log(`connected to NATS ${nc.getServer()} (subject ${this.options.subject})`);
      this.setUp(true);
      this.emit((l) => l.onResync()); // what was committed before the subscription
    } catch (err) {
      if (this.stopped) return;
      this.logger.warn(`NATS connection failed: ${(err as Error).message}; retrying`);
      setTimeout(() => void this.start(), 1000).unref();
    }
  }

  private async watch(nc: NatsConnection): Promise<void> {
    for await (const s of nc.status() as AsyncIterable<Status>) {
      if (this.stopped) return;
      if (s.type === 'disconnect') {
        this.logger.warn(`NATS connection lost (${s.server}); reading PostgreSQL every ${this.options.degradedPollMs} ms until it is back`);
        this.setUp(false);
      } else if (s.type === 'reconnect') {
        try {
          await nc.flush(); // our subscription is back on the server before the catch-up read
        } catch {
          continue; // lost again: the next status says so
        }
        this.logger.log(`NATS connection restored (${s.server})`);
        this.setUp(true);
        this.emit((l) => l.onResync());
      }
    }
    // The iterator ends when the connection is closed (shutdown, or given up by the client).
    if (!this.stopped) {
      this.setUp(false);
      this.nc = null;
      setTimeout(() => void this.start(), 1000).unref();
    }
  }

  private setUp(up: boolean): void {
    this.up = up;
    this.metrics?.setNotifierConnected('nats', up);
    this.setPoll(this.stopped ? 0 : up ? this.options.safetyPollMs : this.options.degradedPollMs);
  }

  private setPoll(everyMs: number): void {
    if (everyMs === this.pollEveryMs && (this.pollTimer !== null || everyMs === 0)) return;
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = null;
    this.pollEveryMs = everyMs;
    if (everyMs <= 0) return;
    this.pollTimer = setInterval(() => {
      if (!this.up) this.metrics?.recordNotifierDegradedPoll();
      this.emit((l) => l.onResync());
    }, everyMs);
    this.pollTimer.unref();
  }
}
