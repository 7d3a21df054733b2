import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** A value read at scrape time (by a bounded query or from memory); null keeps the last value. */
export type ScrapeSource<T> = () => Promise<T | null> | T | null;

/** What an outbox holds right now: rows not yet processed and the age of the oldest (0 when empty). */
export interface OutboxBacklog {
  rows: number;
  oldestAgeSeconds: number;
}

/** Outboxes whose backlog is exported: audit records, integration events not yet taken, pending webhook deliveries. */
export type OutboxName = 'audit' | 'integration_events' | 'webhooks';

/** A backlog source is queried at most once per this (several scrapers, one cheap query). */
export const OUTBOX_SCRAPE_MIN_INTERVAL_MS = 5_000;

/** Label value of a run that ended without a termination reason or error code. */
export const NO_REASON = 'none';

const SECONDS_FAST = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const SECONDS_RUN = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600];

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
  private readonly runsStarted: Counter;
  private readonly runsFinished: Counter<'status' | 'reason'>;
  private readonly runDuration: Histogram<'status'>;
  private readonly timeToFirstEvent: Histogram;
  private readonly modelCall: Histogram<'model' | 'outcome'>;
  private readonly toolCall: Histogram<'tool' | 'outcome'>;
  private readonly poolWait: Histogram<'priority'>;
  private readonly httpErrors: Counter<'status' | 'code'>;
  private readonly rateLimited: Counter<'route'>;
  private readonly idempotencyReplays: Counter<'route'>;
  private readonly deadlockRetries: Counter;
  private readonly notifierConnected: Gauge<'kind'>;
  private readonly notifierDegradedPolls: Counter;
  private readonly webhookAttempts: Counter<'outcome'>;
  private readonly webhookFailures: Counter;
  private readonly webhookLatency: Histogram<'outcome'>;
  private readonly auditCheckpoints: Counter<'outcome'>;
  private readonly outboxes = new Map<OutboxName, { source: ScrapeSource<OutboxBacklog>; at: number; last: OutboxBacklog | null; read: Promise<OutboxBacklog | null> }>();
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
    this.webhookAttempts = new Counter({
      name: 'agent_api_webhook_attempts_total',
      help: 'Webhook delivery attempts made by this node, by outcome (delivered, http_error, timeout, network, too_large, not_allowed)',
      labelNames: ['outcome'],
      registers: [this.registry],
    });
    this.webhookFailures = new Counter({
      name: 'agent_api_webhook_deliveries_failed_total',
      help: 'Webhook deliveries this node gave up on (status failed: retries exhausted or not deliverable)',
      registers: [this.registry],
    });
    this.auditCheckpoints = new Counter({
      name: 'agent_api_audit_checkpoints_total',
      help: 'Audit checkpoints of this node, by outcome (signed; refused: a record since the last checkpoint failed its mac or hash, nothing was signed)',
      labelNames: ['outcome'],
      registers: [this.registry],
    });
    this.webhookLatency = new Histogram({
      name: 'agent_api_webhook_attempt_duration_seconds',
      help: 'Duration of webhook delivery attempts (request sent to response read), by outcome',
      labelNames: ['outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
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
      help: 'Live SSE deliveries only: time from an event being committed (occurred_at) to it being written on the socket of a stream requested before the event occurred (replayed history is not counted)',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60],
      registers: [this.registry],
    });
    this.runsStarted = new Counter({
      name: 'agent_api_runs_started_total',
      help: 'Runs whose run.started this node committed',
      registers: [this.registry],
    });
    this.runsFinished = new Counter({
      name: 'agent_api_runs_finished_total',
      help: 'Runs that reached a terminal status on this node, by status and reason (termination_reason of terminated runs, error code of failed and expired runs, else "none")',
      labelNames: ['status', 'reason'],
      registers: [this.registry],
    });
    this.runDuration = new Histogram({
      name: 'agent_api_run_duration_seconds',
      help: 'Run duration from acceptance (created_at) to its terminal status (finished_at), by status; includes queueing and waits',
      labelNames: ['status'],
      buckets: SECONDS_RUN,
      registers: [this.registry],
    });
    this.timeToFirstEvent = new Histogram({
      name: 'agent_api_run_time_to_first_event_seconds',
      help: 'Time from a run being accepted (created_at) to its first event (run.started) being committed: queueing plus the claim',
      buckets: SECONDS_FAST,
      registers: [this.registry],
    });
    this.modelCall = new Histogram({
      name: 'agent_api_model_call_duration_seconds',
      help: 'Model calls (one streamed turn each), by model and outcome ("ok", "cancelled" or the run error code)',
      labelNames: ['model', 'outcome'],
      buckets: SECONDS_FAST,
      registers: [this.registry],
    });
    this.toolCall = new Histogram({
      name: 'agent_api_tool_call_duration_seconds',
      help: 'Server tool executions (each attempt), by tool name and outcome ("ok" or "error")',
      labelNames: ['tool', 'outcome'],
      buckets: SECONDS_FAST,
      registers: [this.registry],
    });
    this.poolWait = new Histogram({
      name: 'agent_api_db_pool_wait_seconds',
      help: 'Time a caller waited for a database connection of the pool, by priority (interactive, run-start, background); 0 when one was free',
      labelNames: ['priority'],
      buckets: [0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 15],
      registers: [this.registry],
    });
    this.httpErrors = new Counter({
      name: 'agent_api_http_errors_total',
      help: 'Error responses (the contract envelope), by status and error code',
      labelNames: ['status', 'code'],
      registers: [this.registry],
    });
    this.rateLimited = new Counter({
      name: 'agent_api_rate_limited_total',
      help: '429 rate_limited answers (request rate per key, or open SSE streams per key), by route template',
      labelNames: ['route'],
      registers: [this.registry],
    });
    this.idempotencyReplays = new Counter({
      name: 'agent_api_idempotency_replays_total',
      help: 'Responses replayed from an idempotency record (Idempotent-Replayed: true), by route template',
      labelNames: ['route'],
      registers: [this.registry],
    });
    this.deadlockRetries = new Counter({
      name: 'agent_api_db_deadlock_retries_total',
      help: 'Transactions or statements that PostgreSQL aborted as a deadlock victim (40P01) and that ran again; writers keep one lock order, so anything but 0 is a bug',
      registers: [this.registry],
    });
    this.notifierConnected = new Gauge({
      name: 'agent_api_notifier_connected',
      help: 'The cross-node event notifier is connected (1) or not (0), by kind (nats); while 0 streams are served by reading PostgreSQL on a timer',
      labelNames: ['kind'],
      registers: [this.registry],
    });
    this.notifierDegradedPolls = new Counter({
      name: 'agent_api_notifier_degraded_polls_total',
      help: 'Rounds of reading PostgreSQL for every followed stream because the notifier (NATS) was unreachable',
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
    // Both outbox gauges of a scrape (collected concurrently) share one read per source.
    const backlogs = async () => {
      const out: Array<[OutboxName, OutboxBacklog]> = [];
      for (const [name, o] of self.outboxes) {
        if (Date.now() - o.at >= OUTBOX_SCRAPE_MIN_INTERVAL_MS) {
          o.at = Date.now();
          o.read = Promise.resolve(o.source()).then(
            (v) => (o.last = v ?? o.last),
            () => o.last,
          );
        }
        const v = await o.read;
        if (v) out.push([name, v]);
      }
      return out;
    };
    new Gauge({
      name: 'agent_api_outbox_backlog',
      help: 'Rows waiting in an outbox (audit: run-event and request records not yet chained; integration_events: run and attachment changes not yet fanned out to webhook deliveries; webhooks: deliveries pending), read at scrape time by a bounded query at most every 5 s',
      labelNames: ['outbox'],
      registers: [this.registry],
      async collect() {
        for (const [outbox, b] of await backlogs()) this.set({ outbox }, b.rows);
      },
    });
    new Gauge({
      name: 'agent_api_outbox_oldest_age_seconds',
      help: 'Age of the oldest row waiting in an outbox (0 when empty)',
      labelNames: ['outbox'],
      registers: [this.registry],
      async collect() {
        // The backlog gauge above refreshed the sources in this scrape: the cached values are read.
        for (const [outbox, b] of await backlogs()) this.set({ outbox }, b.oldestAgeSeconds);
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

  /** An outbox's backlog, read at scrape time (rate-limited to one query per OUTBOX_SCRAPE_MIN_INTERVAL_MS). */
  setOutboxSource(name: OutboxName, source: ScrapeSource<OutboxBacklog>): void {
    this.outboxes.set(name, { source, at: 0, last: null, read: Promise.resolve(null) });
  }

  recordHttp(method: string, route: string, status: number, seconds: number): void {
    this.httpDuration.observe({ method, route, status: String(status) }, seconds);
  }

  recordHttpError(status: number, code: string, route: string): void {
    this.httpErrors.inc({ status: String(status), code });
    if (status === 429) this.rateLimited.inc({ route });
  }

  recordIdempotencyReplay(route: string): void {
    this.idempotencyReplays.inc({ route });
  }

  setNotifierConnected(kind: string, connected: boolean): void {
    this.notifierConnected.set({ kind }, connected ? 1 : 0);
  }

  recordNotifierDegradedPoll(): void {
    this.notifierDegradedPolls.inc();
  }

  recordDeadlockRetry(): void {
    this.deadlockRetries.inc();
  }

  recordRunStarted(createdAt: Date, now = Date.now()): void {
    this.runsStarted.inc();
    this.timeToFirstEvent.observe(Math.max(0, now - createdAt.getTime()) / 1000);
  }

  recordRunFinished(status: string, reason: string | null, createdAt: Date, finishedAt: Date): void {
    this.runsFinished.inc({ status, reason: reason ?? NO_REASON });
    this.runDuration.observe({ status }, Math.max(0, finishedAt.getTime() - createdAt.getTime()) / 1000);
  }

  recordModelCall(model: string, outcome: string, seconds: number): void {
    this.modelCall.observe({ model, outcome }, seconds);
  }

  recordWebhookAttempt(outcome: string, seconds: number): void {
    this.webhookAttempts.inc({ outcome });
    this.webhookLatency.observe({ outcome }, seconds);
  }

  recordAuditCheckpoint(outcome: 'signed' | 'refused'): void {
    this.auditCheckpoints.inc({ outcome });
  }

  recordWebhookFailed(): void {
    this.webhookFailures.inc();
  }

  recordToolCall(tool: string, ok: boolean, seconds: number): void {
    this.toolCall.observe({ tool, outcome: ok ? 'ok' : 'error' }, seconds);
  }

  recordPoolWait(priority: string, seconds: number): void {
    this.poolWait.observe({ priority }, seconds);
  }

  recordEventsAppended(types: readonly string[]): void {
    for (const type of types) this.eventsAppended.inc({ type });
  }

  /** A live delivery (the stream was open before the event occurred); replays are not delivery lag. */
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
