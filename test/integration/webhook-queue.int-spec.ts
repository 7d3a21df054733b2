import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { endpointPolicy, WebhookEndpoint } from '../../src/modules/webhooks/domain/webhook-events';
import { WebhookDeliveryQueue, WebhookEndpointRepository } from '../../src/modules/webhooks/domain/webhook.repository';
import { NO_WORKER } from '../helpers/event-fixtures';
import { startTestApp, TestApp } from '../helpers/test-app';

/**
 * The delivery queue's statements on the real database (both): a claim returns each delivery
 * with its endpoint, and recording an answered attempt marked `handoff` claims its endpoint's
 * next due delivery in the same statement - leased as a claim is, never more than were offered,
 * never for a disabled endpoint, a failure or an attempt whose claim was superseded - so an
 * endpoint's leases never outnumber its cap.
 */
describe('WebhookDeliveryQueue: claims and the handoff of an answered attempt', () => {
  let t: TestApp;
  let uow: UnitOfWork;
  let queue: WebhookDeliveryQueue;
  let endpoints: WebhookEndpointRepository;
  const policy = endpointPolicy(2, 1000);
  const LEASE_MS = 20_000;
  let n = 0;

  beforeAll(async () => {
    t = await startTestApp(NO_WORKER);
    uow = t.app.get(UnitOfWork);
    queue = t.app.get(WebhookDeliveryQueue);
    endpoints = t.app.get(WebhookEndpointRepository);
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  /** An enabled endpoint (cap 2 by `policy`) with `due` pending deliveries due one second apart (oldest first). */
  async function endpointWith(due: number): Promise<{ endpoint: WebhookEndpoint; ids: string[] }> {
    const id = `wh_q${++n}_${Date.now()}`;
    const at = new Date();
    const endpoint: WebhookEndpoint = {
      id,
      tenantId: 'tenant_a',
      url: 'http://127.0.0.1:9/hook',
      events: ['run.completed'],
      description: null,
      enabled: true,
      secretVersion: 1,
      createdAt: at,
      updatedAt: at,
    };
    await endpoints.insert(endpoint, 'sealed-secret-' + id);
    const ids: string[] = [];
    for (let i = 0; i < due; i++) {
      const did = `whevt_${id}_${i}`;
      ids.push(did);
      await uow.manager.query(
        `INSERT INTO webhook_deliveries (id, tenant_id, endpoint_id, event_type, object_id, status, next_attempt_at, created_at, updated_at)
         VALUES ($1, 'tenant_a', $2, 'run.completed', 'run_x', 'pending', now() - make_interval(secs => $3), now(), now())`,
        [did, id, due - i],
      );
    }
    return { endpoint, ids };
  }

  async function rows(endpointId: string): Promise<Array<{ id: string; status: string; attempts: number; leased: boolean }>> {
    const r: Array<{ id: string; status: string; attempts: number; leased: boolean }> = await uow.manager.query(
      `SELECT id, status, attempts, (lease_until IS NOT NULL AND lease_until > now()) AS leased FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY id`,
      [endpointId],
    );
    return r.map((x) => ({ ...x, attempts: Number(x.attempts) }));
  }

  const delivered = (id: string, attempts = 1) => ({
    id,
    attempts,
    outcome: { status: 'delivered' as const, responseStatus: 200, error: null, excerpt: 'ok', nextAttemptAt: null },
    health: 'answered' as const,
    handoff: true as const,
  });

  async function claimFor(endpointId: string, limit: number) {
    // Other suites' endpoints are not in this database; still, keep only this endpoint's claims.
    const claimed = await queue.claimDue(limit, LEASE_MS, policy);
    return claimed.filter((c) => c.delivery.endpointId === endpointId);
  }

  it('a claim returns each delivery with its endpoint (one statement): the cap of 2, the oldest first', async () => {
    const { endpoint, ids } = await endpointWith(4);
    const claimed = await claimFor(endpoint.id, 10);
    expect(claimed.map((c) => c.delivery.id).sort()).toEqual(ids.slice(0, 2));
    for (const c of claimed) {
      expect(c.delivery).toMatchObject({ endpointId: endpoint.id, attempts: 1, status: 'pending' });
      expect(c.endpoint).toMatchObject({ id: endpoint.id, tenantId: 'tenant_a', url: endpoint.url, enabled: true, events: ['run.completed'], sealedSecret: 'sealed-secret-' + endpoint.id });
    }
    expect((await claimFor(endpoint.id, 10)).length).toBe(0);
  });

  it('an answered attempt marked handoff: the next due delivery is claimed by the write, leased, with its endpoint; the leases stay at the cap', async () => {
    const { endpoint, ids } = await endpointWith(5);
    const first = await claimFor(endpoint.id, 10);
    expect(first.map((c) => c.delivery.id).sort()).toEqual(ids.slice(0, 2));
    const next = await queue.recordAttempts([delivered(ids[0]), delivered(ids[1])], policy, LEASE_MS);
    expect(next.map((c) => c.delivery.id).sort()).toEqual(ids.slice(2, 4));
    expect(next[0].endpoint).toMatchObject({ id: endpoint.id, url: endpoint.url, enabled: true, sealedSecret: 'sealed-secret-' + endpoint.id });
    expect(next[0].delivery.attempts).toBe(1);
    expect(await rows(endpoint.id)).toEqual([
      { id: ids[0], status: 'delivered', attempts: 1, leased: false },
      { id: ids[1], status: 'delivered', attempts: 1, leased: false },
      { id: ids[2], status: 'pending', attempts: 1, leased: true },
      { id: ids[3], status: 'pending', attempts: 1, leased: true },
      { id: ids[4], status: 'pending', attempts: 0, leased: false },
    ]);
    // At its cap: a claim gets nothing more for it.
    expect((await claimFor(endpoint.id, 10)).length).toBe(0);
    // One left: two offered, one taken.
    const last = await queue.recordAttempts([delivered(ids[2]), delivered(ids[3])], policy, LEASE_MS);
    expect(last.map((c) => c.delivery.id)).toEqual([ids[4]]);
    expect(await queue.recordAttempts([delivered(ids[4])], policy, LEASE_MS)).toEqual([]);
    expect((await rows(endpoint.id)).map((r) => r.status)).toEqual(['delivered', 'delivered', 'delivered', 'delivered', 'delivered']);
  });

  it('no handoff without a lease, for a failure, for a superseded claim, or for a disabled endpoint', async () => {
    const { endpoint, ids } = await endpointWith(6);
    await claimFor(endpoint.id, 10);
    // Without leaseMs: recorded, nothing claimed.
    expect(await queue.recordAttempts([delivered(ids[0])], policy)).toEqual([]);
    // A failure (not marked handoff, as the worker records it): the next retry is set, nothing claimed.
    const failed = {
      id: ids[1],
      attempts: 1,
      outcome: { status: 'pending' as const, responseStatus: 500, error: 'http_500', excerpt: null, nextAttemptAt: new Date(Date.now() + 60_000) },
      health: 'failed' as const,
    };
    expect(await queue.recordAttempts([failed], policy, LEASE_MS)).toEqual([]);
    expect((await rows(endpoint.id)).find((r) => r.id === ids[1])).toMatchObject({ status: 'pending', attempts: 1, leased: false });
    const again = await claimFor(endpoint.id, 10);
    expect(again.map((c) => c.delivery.id).sort()).toEqual(ids.slice(2, 4));
    // A superseded claim (attempts no longer match): its outcome is not written and offers nothing.
    expect(await queue.recordAttempts([delivered(ids[2], 7)], policy, LEASE_MS)).toEqual([]);
    expect((await rows(endpoint.id)).find((r) => r.id === ids[2])).toMatchObject({ status: 'pending', leased: true });
    // Disabled meanwhile: the answered attempt is recorded, no successor is claimed.
    await uow.manager.query(`UPDATE webhook_endpoints SET enabled = false WHERE id = $1`, [endpoint.id]);
    expect(await queue.recordAttempts([delivered(ids[3])], policy, LEASE_MS)).toEqual([]);
    expect((await rows(endpoint.id)).find((r) => r.id === ids[3])).toMatchObject({ status: 'delivered', leased: false });
    expect((await rows(endpoint.id)).filter((r) => r.id === ids[4] || r.id === ids[5])).toEqual([
      { id: ids[4], status: 'pending', attempts: 0, leased: false },
      { id: ids[5], status: 'pending', attempts: 0, leased: false },
    ]);
  });
});
