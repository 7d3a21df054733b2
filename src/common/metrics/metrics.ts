import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** A value read at scrape time (by a bounded query or from memory); null keeps the last value. */
export type ScrapeSource<T> = () => Promise<T | null> | T | null;

/**
 * The Prometheus metrics of this node (prom-client), one registry per application instance.
 * Writers call the small `record*` methods; gauges that mirror state read it at scrape time.
 */
@Injectable()
export class Metrics {
  readonly registry = new Registry();
  private readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  private readonly eventsAppended: Counter<'type'>;
  private readonly deliveryLag: Histogram;
  private openStreams: ScrapeSource<number> = () => 0;
  private runsByStatus: ScrapeSource<Record<string, number>> = () => null;
  private leasesHeld: ScrapeSource<number> = () => null;

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'agent_api_' });
    this.httpDuration = new Histogram({
      name: 'agent_api_http_request_duration_seconds',
      help: 'HTTP request duration (SSE streams excluded), by method, route template and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [this.registry],
    });
    this.eventsAppended = new Counter({
      name: 'agent_api_events_appended_total',
      help: 'Run events committed by this node, by type',
      labelNames: ['type'],
      registers: [this.registry],
    });
    this.deliveryLag = new Histogram({
      name: 'agent_api_event_delivery_lag_seconds',
      help: 'Time from an event being committed (occurred_at) to it being written on an SSE socket',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60],
      registers: [this.registry],
    });
    const self = this;
    new Gauge({
      name: 'agent_api_sse_streams_open',
      help: 'Open SSE streams on this node',
      registers: [this.registry],
      async collect() {
        const v = await self.openStreams();
        if (v !== null) this.set(v);
      },
    });
    new Gauge({
      name: 'agent_api_runs',
      help: 'Non-terminal runs in the database by status (read at scrape time by a bounded query)',
      labelNames: ['status'],
      registers: [this.registry],
      async collect() {
        const v = await self.runsByStatus();
        if (v === null) return;
        for (const [status, n] of Object.entries(v)) this.set({ status }, n);
      },
    });
    new Gauge({
      name: 'agent_api_worker_leases_held',
      help: 'Run leases held by the worker of this node',
      registers: [this.registry],
      async collect() {
        const v = await self.leasesHeld();
        if (v !== null) this.set(v);
      },
    });
  }

  /** Wires the scrape-time sources (done once by the ops module). */
  setSources(sources: { openStreams?: ScrapeSource<number>; runsByStatus?: ScrapeSource<Record<string, number>>; leasesHeld?: ScrapeSource<number> }): void {
    if (sources.openStreams) this.openStreams = sources.openStreams;
    if (sources.runsByStatus) this.runsByStatus = sources.runsByStatus;
    if (sources.leasesHeld) this.leasesHeld = sources.leasesHeld;
  }

  recordHttp(method: string, route: string, status: number, seconds: number): void {
    this.httpDuration.observe({ method, route, status: String(status) }, seconds);
  }

  recordEventsAppended(types: readonly string[]): void {
    for (const type of types) this.eventsAppended.inc({ type });
  }

  recordDeliveryLag(occurredAt: Date, now = Date.now()): void {
    this.deliveryLag.observe(Math.max(0, now - occurredAt.getTime()) / 1000);
  }

  contentType(): string {
    return this.registry.contentType;
  }

  async render(): Promise<string> {
    return this.registry.metrics();
  }
}
