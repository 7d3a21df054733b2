import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { AppConfig, WEBHOOK_ATTEMPT_TIMEOUT_MS } from '../../../common/config/app-config';
import { DbPriority } from '../../../common/database/db-priority';
import { Metrics } from '../../../common/metrics/metrics';
import { OutboundError, OutboundHttpClient } from '../../../common/outbound/outbound-http';
import { EndpointPolicy, endpointPolicy, nextRetryAt } from '../domain/webhook-events';
import { signWebhook, WebhookSecretBox } from '../domain/webhook-signature';
import { AttemptOutcome, ClaimedDelivery, RecordedAttempt, WebhookDeliveryQueue } from '../domain/webhook.repository';
import { WebhookPayloads } from './webhook-payloads';

const POLL_MS = 250;
/**
 * Attempts in flight on one node at most (over all endpoints; each endpoint has its own cap,
 * `WEBHOOK_MAX_IN_FLIGHT`, and one when it backs off): bounds sockets and memory, not isolation.
 */
export const NODE_MAX_IN_FLIGHT = 64;
/** Integration events taken out of the outbox per statement. */
const FAN_OUT_BATCH = 500;
/**
 * Kept between the end of an attempt's request at the latest and the end of its lease
 * (`WEBHOOK_LEASE_MS`, counted by the database from the claim statement).
 */
const LEASE_GUARD_MS = 1_000;
/** What is kept of a response body. */
const EXCERPT_CHARS = 256;
/** Receivers answer with small bodies; anything larger is cut off (and only the excerpt is kept). */
const MAX_RESPONSE_BYTES = 64 * 1024;

/** The latest a claimed attempt's request may start: its timeout then ends `LEASE_GUARD_MS` before the lease (counted from `claiming`). */
function startDeadline(claiming: number, leaseMs: number): number {
  return claiming + leaseMs - LEASE_GUARD_MS - WEBHOOK_ATTEMPT_TIMEOUT_MS;
}

/**
 * Delivers webhooks, on every node, as a pipeline (no rounds): each turn of the loop turns
 * integration events (the outbox the runs and attachments modules write with their changes) into
 * deliveries, one per subscribed endpoint, in the statement that takes them (SKIP LOCKED); then,
 * if the node has free slots, claims due deliveries for them (one statement, per endpoint: see
 * `claimDue`) and starts their attempts without waiting for them. An answered attempt passes its
 * slot on: the statement that records its outcome claims its endpoint's next due delivery
 * (`recordAttempts`' handoff), whose attempt starts at once - a busy endpoint's deliveries
 * cost no claim round of their own. A slot that is not passed on (a failure, nothing due) wakes
 * the loop, whose next claim may fill it. Each attempt POSTs
 * through the guarded outbound client, signed per Standard Webhooks (the same `webhook-id` on
 * every attempt, a fresh timestamp and signature), then records the outcome: `delivered` on
 * 2xx, else the next attempt after an exponential backoff with jitter, or `failed` once the
 * retry window is over; and the endpoint's health (`endpointLimits`).
 */
@Injectable()
export class WebhookDeliveryWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('WebhookDeliveryWorker');
  private running = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private readonly stop = new AbortController();
  /** Outcomes waiting for the next write (`record`), and whether a write is in flight. */
  private readonly unrecorded: Array<{ attempt: RecordedAttempt; resolve: () => void; reject: (err: Error) => void }> = [];
  private recording = false;
  /** Attempts in flight on this node (the database counts them per endpoint, for the cap). */
  private readonly inFlight = new Set<Promise<void>>();
  /** Set when an ended attempt asked for a claim while the loop was not idle. */
  private woken = false;
  private readonly policy: EndpointPolicy;

  constructor(
    private readonly store: WebhookDeliveryQueue,
    private readonly payloads: WebhookPayloads,
    private readonly box: WebhookSecretBox,
    private readonly http: OutboundHttpClient,
    private readonly config: AppConfig,
    @Optional() private readonly metrics?: Metrics,
  ) {
    this.policy = endpointPolicy(config.webhookMaxInFlight, config.webhookRetryBaseMs);
  }

  onApplicationBootstrap(): void {
    this.metrics?.setOutboxSource('webhooks', () =>
      this.store.backlog().catch((err: Error) => {
        this.logger.warn(`metrics: webhook backlog not refreshed: ${err.message}`);
        return null;
      }),
    );
    if (this.config.workerEnabled) this.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.running = false;
    this.stop.abort();
    this.wake?.();
    await this.loop;
    await this.settled();
  }

  /** Resolves once every attempt started so far has ended (its outcome recorded). */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    // Deliveries are background work (as the audit chaining): requests are served first.
    this.loop = DbPriority.run('background', () => this.run());
  }

  private async run(): Promise<void> {
    while (this.running) {
      let busy = false;
      try {
        const taken = await this.store.fanOut(FAN_OUT_BATCH);
        const free = NODE_MAX_IN_FLIGHT - this.inFlight.size;
        const claimed = free > 0 ? await this.claimAndStart(free) : 0;
        // All free slots taken: more may be due (claimed once a slot frees, which wakes the loop).
        busy = taken === FAN_OUT_BATCH || (claimed > 0 && claimed === free);
      } catch (err) {
        if (this.running) this.logger.error(`webhook delivery round failed: ${(err as Error).message}`);
      }
      if (!busy && this.running) await this.idle();
    }
  }

  private idle(): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(done, POLL_MS);
      timer.unref();
      const self = this;
      function done() {
        clearTimeout(timer);
        self.wake = null;
        self.woken = false;
        resolve();
      }
      this.wake = done;
    });
  }

  /**
   * Claims up to `slots` due deliveries and starts their attempts (not awaited: `settled` waits
   * for them); returns how many were claimed. A claim leases the row for `WEBHOOK_LEASE_MS` (the
   * attempt timeout plus a margin): a node that dies mid-attempt leaves it to another node after
   * that. No attempt outlives its lease: the lease is counted from before the claim statement,
   * and a request starts only if its whole timeout (it is aborted then) ends `LEASE_GUARD_MS`
   * before the lease does.
   */
  async claimAndStart(slots = NODE_MAX_IN_FLIGHT - this.inFlight.size): Promise<number> {
    if (slots <= 0) return 0;
    const leaseMs = this.config.webhookLeaseMs;
    const claiming = performance.now();
    const claimed = await this.store.claimDue(slots, leaseMs, this.policy);
    const requestsStartBy = startDeadline(claiming, leaseMs);
    for (const c of claimed) this.track(this.attempt(c, requestsStartBy));
    return claimed.length;
  }

  /** `attempt` resolves true when its slot was offered for a handoff (the write then wakes the loop if it was not taken). */
  private track(attempt: Promise<boolean | void>): void {
    const p: Promise<void> = attempt
      .catch((err: Error) => {
        if (this.running) this.logger.error(`webhook attempt failed: ${err.message}`);
        return false;
      })
      .then((offered) => {
        this.inFlight.delete(p);
        // Every freed slot that was not passed on wakes the loop (a round while it runs: wakes
        // coalesce into one more round). Waking only when the endpoint was locally at its cap
        // lost wakes: an attempt that ended while the claim that filled the cap was running left
        // the count below the cap, and the endpoint's next deliveries waited for the 250 ms poll
        // (bench B6: 4 in flight drained 73-79 deliveries/s instead of ~500; bench/README.md
        // session 11).
        if (offered !== true) this.notify();
      });
    this.inFlight.add(p);
  }

  private notify(): void {
    if (!this.running) return;
    if (this.wake) this.wake();
    else this.woken = true;
  }

  /** Resolves true when the outcome was recorded with a handoff of its slot (see `track`). */
  private async attempt({ delivery: d, endpoint }: ClaimedDelivery, startBy: number): Promise<boolean | void> {
    const fail = async (error: string) => {
      await this.record(d.id, d.attempts, { status: 'failed', responseStatus: null, error, excerpt: null, nextAttemptAt: null }, null);
      this.metrics?.recordWebhookFailed();
    };
    // Disabled or deleted between the claim and the endpoint's read: no request, and the claim is
    // not counted as an attempt (a disabled endpoint's deliveries show the attempts really made).
    if (!endpoint || !endpoint.enabled) {
      await this.record(d.id, d.attempts, { status: 'failed', responseStatus: null, error: 'endpoint_disabled', excerpt: null, nextAttemptAt: null }, null, { notStarted: true });
      return;
    }
    let body: string | null;
    try {
      body = await this.payloads.render(d);
    } catch (err) {
      this.logger.warn(`webhook ${d.id}: payload not rendered, will retry: ${(err as Error).message}`);
      return this.retryOrFail(d, null, 'render_failed', null, null);
    }
    if (body === null) return fail('object_gone');
    // Rendering was slow (a loaded database): the request could outlive the lease, and another
    // node might post the event while this one still waits. Try again later instead.
    if (performance.now() > startBy) return this.retryOrFail(d, null, 'render_timeout', null, null);
    const secret = this.box.open(endpoint.sealedSecret);
    const headers = { 'content-type': 'application/json', 'user-agent': 'agent-api-webhooks', ...signWebhook(secret, d.id, Math.floor(Date.now() / 1000), body) };
    const started = performance.now();
    try {
      const res = await this.http.request({
        url: endpoint.url,
        method: 'POST',
        headers,
        body,
        timeoutMs: WEBHOOK_ATTEMPT_TIMEOUT_MS,
        signal: this.stop.signal,
        maxBodyBytes: MAX_RESPONSE_BYTES,
      });
      const excerpt = res.body.subarray(0, EXCERPT_CHARS * 4).toString('utf8').slice(0, EXCERPT_CHARS);
      const ok = res.status >= 200 && res.status < 300;
      this.metrics?.recordWebhookAttempt(ok ? 'delivered' : 'http_error', res.durationMs / 1000);
      if (ok) {
        const handoff = this.running;
        await this.record(d.id, d.attempts, { status: 'delivered', responseStatus: res.status, error: null, excerpt, nextAttemptAt: null }, 'answered', handoff ? { handoff } : {});
        return handoff;
      } else {
        await this.retryOrFail(d, res.status, `http_${res.status}`, excerpt, 'failed');
      }
    } catch (err) {
      if (!(err instanceof OutboundError)) throw err;
      if (err.kind === 'aborted') return; // shutting down: the lease runs out and another attempt follows
      this.metrics?.recordWebhookAttempt(err.kind, (performance.now() - started) / 1000);
      if (err.kind === 'not_allowed') return fail('url_not_allowed');
      await this.retryOrFail(d, null, err.kind, null, 'failed');
    }
  }

  /**
   * Records an attempt's outcome. Outcomes are written together (group commit): the first is
   * written at once, and those that arrive while a write is in flight go in the next one, so
   * under load a round's deliveries cost one statement rather than one each, and no outcome waits
   * for a slower attempt of its round.
   */
  private record(
    id: string,
    attempts: number,
    outcome: AttemptOutcome,
    health: RecordedAttempt['health'],
    opts: { notStarted?: true; handoff?: boolean } = {},
  ): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const flags = { ...(opts.notStarted ? { notStarted: true as const } : {}), ...(opts.handoff ? { handoff: true as const } : {}) };
      this.unrecorded.push({ attempt: { id, attempts, outcome, health, ...flags }, resolve, reject });
      if (!this.recording) void this.writeRecords();
    });
  }

  private async writeRecords(): Promise<void> {
    this.recording = true;
    try {
      while (this.unrecorded.length > 0) {
        const batch = this.unrecorded.splice(0);
        try {
          // Handoffs claim with the same lease and start deadline as `claimAndStart`.
          const offered = this.running ? batch.filter((b) => b.attempt.handoff).length : 0;
          const leaseMs = this.config.webhookLeaseMs;
          const claiming = performance.now();
          const next = await this.store.recordAttempts(
            batch.map((b) => b.attempt),
            this.policy,
            offered > 0 ? leaseMs : undefined,
          );
          const requestsStartBy = startDeadline(claiming, leaseMs);
          for (const c of next) this.track(this.attempt(c, requestsStartBy));
          // A slot offered and not taken (nothing due, the endpoint disabled): the loop's claim may fill it.
          if (next.length < offered) this.notify();
          for (const b of batch) b.resolve();
        } catch (err) {
          for (const b of batch) b.reject(err as Error);
        }
      }
    } finally {
      this.recording = false;
    }
  }

  private async retryOrFail(
    d: ClaimedDelivery['delivery'],
    responseStatus: number | null,
    error: string,
    excerpt: string | null,
    health: RecordedAttempt['health'],
  ): Promise<void> {
    const next = nextRetryAt(d.attempts, d.createdAt, new Date(), this.config.webhookRetryBaseMs, this.config.webhookRetryWindowMs);
    await this.record(d.id, d.attempts, { status: next ? 'pending' : 'failed', responseStatus, error, excerpt, nextAttemptAt: next }, health);
    if (!next) this.metrics?.recordWebhookFailed();
  }
}
