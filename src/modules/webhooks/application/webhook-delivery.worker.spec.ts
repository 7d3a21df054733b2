import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig, WEBHOOK_ATTEMPT_TIMEOUT_MS } from '../../../common/config/app-config';
import { OutboundHttpClient, OutboundRequest, OutboundUrlPolicy } from '../../../common/outbound/outbound-http';
import { WebhookDelivery } from '../domain/webhook-events';
import { WebhookSecretBox } from '../domain/webhook-signature';
import { AttemptOutcome, ClaimedDelivery, WebhookDeliveryQueue } from '../domain/webhook.repository';
import { WebhookDeliveryWorker } from './webhook-delivery.worker';
import { WebhookPayloads } from './webhook-payloads';

/** The queue's side of one claim: what the worker asked for and recorded. */
class OneClaimQueue extends WebhookDeliveryQueue {
  leases: number[] = [];
  recorded: Array<{ id: string; attempts: number; outcome: AttemptOutcome }> = [];
  constructor(private claim: ClaimedDelivery | null) {
    super();
  }
  async fanOut(): Promise<number> {
    return 0;
  }
  async claimDue(_limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    this.leases.push(leaseMs);
    const c = this.claim;
    this.claim = null;
    return c ? [c] : [];
  }
  async recordAttempts(attempts: Array<{ id: string; attempts: number; outcome: AttemptOutcome }>): Promise<void> {
    this.recorded.push(...attempts);
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

  function setUp(renderMs: number, env: Record<string, string> = {}) {
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
      enabled: true,
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
    const http = new OutboundHttpClient(new OutboundUrlPolicy(['http://127.0.0.1']));
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
    expect(await worker.deliverDue()).toBe(1);
    expect(queue.leases).toEqual([20_000]);
    expect(requests).toHaveLength(1);
    // The request is aborted at its timeout, which ends before the lease does.
    expect(requests[0].timeoutMs).toBe(WEBHOOK_ATTEMPT_TIMEOUT_MS);
    expect(requests[0].at + requests[0].timeoutMs).toBeLessThan(claimedAt + 20_000);
    expect(hits).toBe(1);
    expect(queue.recorded).toMatchObject([{ id: 'whevt_1', attempts: 1, outcome: { status: 'delivered', responseStatus: 200 } }]);
  });

  it('the latest a request may start: its timeout still ends a second before the lease', async () => {
    const { worker, queue, requests } = setUp(15_000 - WEBHOOK_ATTEMPT_TIMEOUT_MS - 1_000, { WEBHOOK_LEASE_MS: '15000' });
    const claimedAt = now;
    await worker.deliverDue();
    expect(queue.leases).toEqual([15_000]);
    expect(requests).toHaveLength(1);
    expect(requests[0].at + requests[0].timeoutMs).toBeLessThanOrEqual(claimedAt + 15_000 - 1_000);
    expect(queue.recorded[0].outcome.status).toBe('delivered');
  });

  it('a payload rendered too late for a full attempt within the lease is not posted: retried later (render_timeout)', async () => {
    const { worker, queue, requests } = setUp(15_000 - WEBHOOK_ATTEMPT_TIMEOUT_MS - 1_000 + 1, { WEBHOOK_LEASE_MS: '15000' });
    await worker.deliverDue();
    expect(requests).toEqual([]);
    expect(hits).toBe(0);
    expect(queue.recorded).toHaveLength(1);
    expect(queue.recorded[0].outcome).toMatchObject({ status: 'pending', error: 'render_timeout', responseStatus: null });
    expect(queue.recorded[0].outcome.nextAttemptAt).toBeInstanceOf(Date);
  });
});
