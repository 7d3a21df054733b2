import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig, WEBHOOK_ATTEMPT_TIMEOUT_MS } from '../../../common/config/app-config';
import { OutboundHttpClient, OutboundRequest, OutboundUrlPolicy } from '../../../common/outbound/outbound-http';
import { EndpointPolicy, WebhookDelivery } from '../domain/webhook-events';
import { WebhookSecretBox } from '../domain/webhook-signature';
import { ClaimedDelivery, RecordedAttempt, WebhookDeliveryQueue } from '../domain/webhook.repository';
import { NODE_MAX_IN_FLIGHT, WebhookDeliveryWorker } from './webhook-delivery.worker';
import { WebhookPayloads } from './webhook-payloads';

/** The queue's side of one claim: what the worker asked for and recorded. */
class OneClaimQueue extends WebhookDeliveryQueue {
  leases: number[] = [];
  recorded: RecordedAttempt[] = [];
  constructor(private claim: ClaimedDelivery | null) {
    super();
  }
  async fanOut(): Promise<number> {
    return 0;
  }
  async claimDue(_limit: number, leaseMs: number, _policy: EndpointPolicy): Promise<ClaimedDelivery[]> {
    this.leases.push(leaseMs);
    const c = this.claim;
    this.claim = null;
    return c ? [c] : [];
  }
  async recordAttempts(attempts: RecordedAttempt[]): Promise<ClaimedDelivery[]> {
    this.recorded.push(...attempts);
    return [];
  }
  async backlog() {
    return { rows: 0, oldestAgeSeconds: 0 };
  }
}

/**
 * The claim lease and the attempt timeout: `WEBHOOK_LEASE_MS` (default 20 s: the 10 s timeout
 * plus a margin) is what a claim leases, and no request is started that could still run when the
 * lease ends - a payload rendered too late is retried instead of posted. The clock
 * (`performance.now`) is moved by the render step; the receiver and the HTTP client are real.
 */
describe('WebhookDeliveryWorker: the lease bounds every attempt', () => {
  let server: Server;
  let url: string;
  let hits = 0;
  let now = 0;

  beforeAll(async () => {
    server = createServer((_req, res) => {
      hits++;
      res.writeHead(200).end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    await new Promise<void>((r) => server.close(() => r()));
  });
  beforeEach(() => {
    hits = 0;
    now = 1_000_000;
    jest.spyOn(performance, 'now').mockImplementation(() => now);
  });
  afterEach(() => jest.restoreAllMocks());

  function setUp(renderMs: number, env: Record<string, string> = {}, enabled = true) {
    const config = loadConfig({ WORKER_ENABLED: 'false', ...env });
    const box = new WebhookSecretBox(Buffer.alloc(32, 7));
    const now0 = new Date();
    const delivery: WebhookDelivery = {
      id: 'whevt_1',
      tenantId: 'tenant_a',
      endpointId: 'wh_1',
      eventType: 'run.completed',
      objectId: 'run_1',
      status: 'pending',
      attempts: 1,
      lastResponseStatus: null,
      lastError: null,
      lastResponseExcerpt: null,
      nextAttemptAt: now0,
      createdAt: now0,
      deliveredAt: null,
    };
    const endpoint = {
      id: 'wh_1',
      tenantId: 'tenant_a',
      url,
      events: ['run.completed' as const],
      description: null,
      enabled,
      secretVersion: 1,
      createdAt: now0,
      updatedAt: now0,
      sealedSecret: box.seal('whsec_' + Buffer.alloc(32, 1).toString('base64')),
    };
    const queue = new OneClaimQueue({ delivery, endpoint });
    const payloads = {
      render: async () => {
        now += renderMs;
        return '{"id":"whevt_1"}';
      },
    } as unknown as WebhookPayloads;
    const http = new OutboundHttpClient(new OutboundUrlPolicy(['http://127.0.0.1:*']));
    const requests: Array<{ at: number; timeoutMs: number }> = [];
    const request = http.request.bind(http);
    jest.spyOn(http, 'request').mockImplementation((req: OutboundRequest) => {
      requests.push({ at: now, timeoutMs: req.timeoutMs });
      return request(req);
    });
    return { worker: new WebhookDeliveryWorker(queue, payloads, box, http, config), queue, requests, config };
  }

  it('claims with WEBHOOK_LEASE_MS (default: the 10 s attempt timeout + 10 s) and posts a promptly rendered payload', async () => {
    const { worker, queue, requests, config } = setUp(5);
    expect(config.webhookLeaseMs).toBe(WEBHOOK_ATTEMPT_TIMEOUT_MS + 10_000);
    const claimedAt = now;
    expect(await worker.claimAndStart()).toBe(1);
    await worker.settled();
    expect(queue.leases).toEqual([20_000]);
    expect(requests).toHaveLength(1);
    // The request is aborted at its timeout, which ends before the lease does.
    expect(requests[0].timeoutMs).toBe(WEBHOOK_ATTEMPT_TIMEOUT_MS);
    expect(requests[0].at + requests[0].timeoutMs).toBeLessThan(claimedAt + 20_000);
    expect(hits).toBe(1);
    expect(queue.recorded).toMatchObject([{ id: 'whevt_1', attempts: 1, outcome: { status: 'delivered', responseStatus: 200 }, health: 'answered' }]);
  });

  it('the latest a request may start: its timeout still ends a second before the lease', async () => {
    const { worker, queue, requests } = setUp(15_000 - WEBHOOK_ATTEMPT_TIMEOUT_MS - 1_000, { WEBHOOK_LEASE_MS: '15000' });
    const claimedAt = now;
    await worker.claimAndStart();
    await worker.settled();
    expect(queue.leases).toEqual([15_000]);
    expect(requests).toHaveLength(1);
    expect(requests[0].at + requests[0].timeoutMs).toBeLessThanOrEqual(claimedAt + 15_000 - 1_000);
    expect(queue.recorded[0].outcome.status).toBe('delivered');
  });

  it('an endpoint disabled between the claim and its read: no request, failed endpoint_disabled, the claim not counted', async () => {
    const { worker, queue, requests } = setUp(5, {}, false);
    expect(await worker.claimAndStart()).toBe(1);
    await worker.settled();
    expect(requests).toEqual([]);
    expect(queue.recorded).toMatchObject([{ id: 'whevt_1', attempts: 1, notStarted: true, health: null, outcome: { status: 'failed', error: 'endpoint_disabled' } }]);
  });

  it('a payload rendered too late for a full attempt within the lease is not posted: retried later (render_timeout)', async () => {
    const { worker, queue, requests } = setUp(15_000 - WEBHOOK_ATTEMPT_TIMEOUT_MS - 1_000 + 1, { WEBHOOK_LEASE_MS: '15000' });
    await worker.claimAndStart();
    await worker.settled();
    expect(requests).toEqual([]);
    expect(hits).toBe(0);
    expect(queue.recorded).toHaveLength(1);
    expect(queue.recorded[0].outcome).toMatchObject({ status: 'pending', error: 'render_timeout', responseStatus: null });
    // No request was made: it says nothing about the endpoint's health.
    expect(queue.recorded[0].health).toBeNull();
    expect(queue.recorded[0].outcome.nextAttemptAt).toBeInstanceOf(Date);
  });
});

/** A queue of deliveries that are all due, handed out as the worker asks (the slot count it asks for is kept). */
class DueQueue extends WebhookDeliveryQueue {
  due: ClaimedDelivery[] = [];
  asked: number[] = [];
  recorded: RecordedAttempt[] = [];
  async fanOut(): Promise<number> {
    return 0;
  }
  async claimDue(limit: number): Promise<ClaimedDelivery[]> {
    this.asked.push(limit);
    return this.due.splice(0, limit);
  }
  async recordAttempts(attempts: RecordedAttempt[]): Promise<ClaimedDelivery[]> {
    this.recorded.push(...attempts);
    return [];
  }
  async backlog() {
    return { rows: 0, oldestAgeSeconds: 0 };
  }
}

/**
 * The pipeline (issue 31): attempts are not grouped in rounds - an attempt that hangs does not
 * hold back one claimed after it, and the node never asks for more than its free slots. Real
 * receivers (one holding its requests, one answering at once) and the real HTTP client.
 */
describe('WebhookDeliveryWorker: a continuous pipeline, no round barrier', () => {
  let server: Server;
  let base: string;
  const heldOpen: Array<() => void> = [];
  const answered: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/hang') {
        heldOpen.push(() => res.writeHead(200).end('late'));
        return;
      }
      answered.push(String(req.headers['webhook-id']));
      res.writeHead(200).end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  function claimed(box: WebhookSecretBox, id: string, endpointId: string, path: string): ClaimedDelivery {
    const at = new Date();
    return {
      delivery: { id, tenantId: 't', endpointId, eventType: 'run.completed', objectId: 'run_1', status: 'pending', attempts: 1, lastResponseStatus: null, lastError: null, lastResponseExcerpt: null, nextAttemptAt: at, createdAt: at, deliveredAt: null },
      endpoint: { id: endpointId, tenantId: 't', url: base + path, events: ['run.completed'], description: null, enabled: true, secretVersion: 1, createdAt: at, updatedAt: at, sealedSecret: box.seal('whsec_' + Buffer.alloc(32, 2).toString('base64')) },
    };
  }

  it('a delivery due after two hanging ones is posted while they still hang; the node asks only for its free slots', async () => {
    const config = loadConfig({ WORKER_ENABLED: 'false' });
    const box = new WebhookSecretBox(Buffer.alloc(32, 3));
    const queue = new DueQueue();
    const payloads = { render: async () => '{}' } as unknown as WebhookPayloads;
    const http = new OutboundHttpClient(new OutboundUrlPolicy(['http://127.0.0.1:*']));
    const worker = new WebhookDeliveryWorker(queue, payloads, box, http, config);
    queue.due.push(claimed(box, 'whevt_h1', 'wh_hang', '/hang'), claimed(box, 'whevt_h2', 'wh_hang', '/hang'));
    worker.start();
    try {
      const until = Date.now() + 5_000;
      while (heldOpen.length < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
      expect(heldOpen).toHaveLength(2);
      // Due only now, while both attempts hang: the old round would wait for them (up to 10 s).
      queue.due.push(claimed(box, 'whevt_ok', 'wh_ok', '/ok'));
      // Wait for the worker's recorded outcome, not the receiver's side: the receiver has answered
      // before the worker reads the answer and records it (a loaded machine shows the gap).
      const okRecorded = () => queue.recorded.some((r) => r.id === 'whevt_ok');
      while (!okRecorded() && Date.now() < until + 5_000) await new Promise((r) => setTimeout(r, 10));
      expect(answered).toEqual(['whevt_ok']);
      expect(queue.recorded.map((r) => [r.id, r.outcome.status, r.health])).toContainEqual(['whevt_ok', 'delivered', 'answered']);
      // ...while both still hang: nothing recorded for them, their requests are still held open.
      expect(heldOpen).toHaveLength(2);
      expect(queue.recorded.some((r) => r.id.startsWith('whevt_h'))).toBe(false);
      // Two (then three) slots taken: the claims asked for what was left of the node's 64.
      expect(queue.asked[0]).toBe(NODE_MAX_IN_FLIGHT);
      expect(Math.min(...queue.asked)).toBeGreaterThanOrEqual(NODE_MAX_IN_FLIGHT - 3);
      expect(queue.asked).toContain(NODE_MAX_IN_FLIGHT - 2);
    } finally {
      for (const release of heldOpen.splice(0)) release();
      await worker.settled();
      await worker.beforeApplicationShutdown();
    }
    expect(queue.recorded.map((r) => r.id).sort()).toEqual(['whevt_h1', 'whevt_h2', 'whevt_ok']);
  });
});

/**
 * The handoff: an answered attempt's outcome is recorded with `handoff`, and the deliveries the
 * queue claims in that write (its endpoint's next due) are attempted at once, without a claim of
 * their own; a failed attempt offers nothing. The queue hands out at most one delivery per
 * `claimDue` (an endpoint at a cap of 1) and one per offered handoff.
 */
class HandoffQueue extends DueQueue {
  claims = 0;
  writes: Array<{ ids: string[]; offered: number; leaseMs: number | undefined; given: string[] }> = [];
  override async claimDue(limit: number): Promise<ClaimedDelivery[]> {
    this.asked.push(limit);
    const c = this.due.splice(0, 1);
    if (c.length > 0) this.claims++;
    return c;
  }
  override async recordAttempts(attempts: RecordedAttempt[], _policy?: EndpointPolicy, leaseMs?: number): Promise<ClaimedDelivery[]> {
    this.recorded.push(...attempts);
    const offered = attempts.filter((a) => a.handoff).length;
    const given = leaseMs === undefined ? [] : this.due.splice(0, offered);
    this.writes.push({ ids: attempts.map((a) => a.id), offered, leaseMs, given: given.map((g) => g.delivery.id) });
    return given;
  }
}

describe('WebhookDeliveryWorker: an answered attempt passes its slot to the next due delivery', () => {
  let server: Server;
  let base: string;
  const seen: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(String(req.headers['webhook-id']));
      res.writeHead(req.url === '/fail' ? 500 : 200).end('x');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  function claimed(box: WebhookSecretBox, id: string, path: string): ClaimedDelivery {
    const at = new Date();
    return {
      delivery: { id, tenantId: 't', endpointId: 'wh_1', eventType: 'run.completed', objectId: 'run_1', status: 'pending', attempts: 1, lastResponseStatus: null, lastError: null, lastResponseExcerpt: null, nextAttemptAt: at, createdAt: at, deliveredAt: null },
      endpoint: { id: 'wh_1', tenantId: 't', url: base + path, events: ['run.completed'], description: null, enabled: true, secretVersion: 1, createdAt: at, updatedAt: at, sealedSecret: box.seal('whsec_' + Buffer.alloc(32, 4).toString('base64')) },
    };
  }

  it('ten deliveries of one endpoint: one claim, nine handoffs, each with the claim lease; a failure offers none', async () => {
    const config = loadConfig({ WORKER_ENABLED: 'false' });
    const box = new WebhookSecretBox(Buffer.alloc(32, 5));
    const queue = new HandoffQueue();
    const payloads = { render: async () => '{}' } as unknown as WebhookPayloads;
    const http = new OutboundHttpClient(new OutboundUrlPolicy(['http://127.0.0.1:*']));
    const worker = new WebhookDeliveryWorker(queue, payloads, box, http, config);
    for (let i = 0; i < 10; i++) queue.due.push(claimed(box, `whevt_${i}`, '/ok'));
    queue.due.push(claimed(box, 'whevt_fail', '/fail'), claimed(box, 'whevt_after', '/ok'));
    worker.start();
    try {
      const until = Date.now() + 10_000;
      while (queue.recorded.length < 12 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    } finally {
      await worker.beforeApplicationShutdown();
    }
    expect(seen).toEqual([...Array.from({ length: 10 }, (_, i) => `whevt_${i}`), 'whevt_fail', 'whevt_after']);
    // whevt_0 was claimed; 1-9 and whevt_fail came by handoff; the failure offered nothing, so
    // whevt_after needed a claim of its own (woken by the failed attempt's freed slot).
    expect(queue.claims).toBe(2);
    expect(queue.writes.flatMap((w) => w.given)).toEqual([...Array.from({ length: 9 }, (_, i) => `whevt_${i + 1}`), 'whevt_fail']);
    for (const w of queue.writes.filter((x) => x.offered > 0)) expect(w.leaseMs).toBe(config.webhookLeaseMs);
    const failed = queue.recorded.find((r) => r.id === 'whevt_fail')!;
    expect(failed).toMatchObject({ health: 'failed', outcome: { status: 'pending', error: 'http_500' } });
    expect(failed.handoff).toBeUndefined();
    expect(queue.recorded.filter((r) => r.handoff).map((r) => r.id)).toEqual([...Array.from({ length: 10 }, (_, i) => `whevt_${i}`), 'whevt_after']);
  });
});
