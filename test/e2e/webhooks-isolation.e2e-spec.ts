import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { createSession, script, startRun, userInput } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';
import { WebhookReceiver } from '../helpers/webhook-receiver';

const RUNS_A = 24;
const RUNS_B = 3;

async function until<T>(what: string | (() => string), ms: number, probe: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${typeof what === 'string' ? what : what()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Isolation (CONTRACT section 14, issue 31): tenant A's endpoints misbehave - one never answers
 * (each attempt runs into the 10 s timeout), one answers 500, one 410 - with 24 runs' deliveries
 * due; tenant B's healthy endpoint still gets each event within 2 s of it. Every receiver
 * verifies signatures with standardwebhooks. Then: the hanging endpoint never had more than
 * WEBHOOK_MAX_IN_FLIGHT attempts open, the failing ones were spaced out (endpoint backoff), and
 * a disabled or deleted endpoint's pending deliveries end `failed` (endpoint_disabled) with the
 * attempts that were really made (0 for those never attempted).
 */
describe('webhooks isolation (e2e): a hanging or failing endpoint delays only its own deliveries', () => {
  let t: TestApp;
  const hang = new WebhookReceiver();
  const err500 = new WebhookReceiver();
  const gone410 = new WebhookReceiver();
  const healthy = new WebhookReceiver();
  const ids: Record<'hang' | 'err500' | 'gone410' | 'healthy', string> = { hang: '', err500: '', gone410: '', healthy: '' };
  let startedA = 0;

  beforeAll(async () => {
    // Short retries: A's failing deliveries are due again and again while B's are measured.
    t = await startTestApp({ WEBHOOK_RETRY_BASE_MS: '100' });
    hang.answer = () => 'hold';
    err500.answer = () => 500;
    gone410.answer = () => 410;
    for (const [name, r, key] of [
      ['hang', hang, KEYS.adminA],
      ['err500', err500, KEYS.adminA],
      ['gone410', gone410, KEYS.adminA],
      ['healthy', healthy, KEYS.adminB],
    ] as const) {
      await r.start();
      const w = await t.call(key, 'POST', '/v1/webhooks', { url: r.url, events: ['run.completed'], description: name });
      expect(w.status).toBe(201);
      r.secret = w.body.secret;
      ids[name] = w.body.id;
    }
  }, 90_000);
  afterAll(async () => {
    await t.close();
    for (const r of [hang, err500, gone410, healthy]) await r.stop();
  });

  it(`tenant B's deliveries arrive within 2 s of their events while tenant A has ${RUNS_A} runs' deliveries due on 3 bad endpoints`, async () => {
    startedA = Date.now();
    const sidA = await createSession(t, KEYS.memberA1);
    for (let i = 0; i < RUNS_A; i++) {
      const r = await startRun(t, KEYS.memberA1, sidA, { input: userInput(script([{ text: `a ${i}` }])), mode: 'sync' });
      expect(r.body.status).toBe('completed');
    }
    // A's endpoints are busy misbehaving: the hanging one holds its cap of attempts open, the others have failed repeatedly.
    // (A precondition, not the measure: generous for a loaded machine; the measure is B's 2 s below.)
    await until(
      () => `tenant A endpoints under way (holding ${hang.holding}, 500: ${err500.received.length}, 410: ${gone410.received.length})`,
      60_000,
      // The hanging endpoint holds at least one attempt open: after its first timeouts the per-endpoint
      // cap shrinks with its failures (inFlightByFailures), so on a loaded machine it may hold only 1
      // (CI embedded: holding 1, 500: 12, 410: 12 after 60 s).
      async () => (hang.holding >= 1 && err500.received.length >= 3 && gone410.received.length >= 3 ? true : undefined),
    );

    const sidB = await createSession(t, KEYS.memberB);
    const latencies: number[] = [];
    for (let i = 0; i < RUNS_B; i++) {
      const r = await startRun(t, KEYS.memberB, sidB, { input: userInput(script([{ text: `b ${i}` }])), mode: 'sync' });
      expect(r.body.status).toBe('completed');
      const [got] = await healthy.waitFor('run.completed', r.body.id, undefined, 15_000);
      expect(got.payload.tenant_id).toBe('tenant_b');
      latencies.push(got.receivedAt - Date.parse(got.payload.created_at));
      // A's hanging attempts are still open while B is served.
      expect(hang.holding).toBeGreaterThan(0);
    }
    const sorted = [...latencies].sort((a, b) => a - b);
    const p99 = sorted[Math.min(sorted.length - 1, Math.ceil(0.99 * sorted.length) - 1)];
    // eslint-disable-next-line no-console
    console.log(
      `webhooks isolation (${t.databaseUrl === 'embedded' || !process.env.DATABASE_URL ? 'embedded' : 'postgres'}): tenant B event -> receipt ms ` +
        `${JSON.stringify(latencies)}; p99 ${p99}, max ${sorted.at(-1)}; tenant A meanwhile: hanging endpoint held ${hang.held.length} ` +
        `(most open at once ${hang.maxHolding}), 500 endpoint ${err500.received.length} attempts, 410 endpoint ${gone410.received.length} attempts`,
    );
    expect(sorted.at(-1)).toBeLessThan(2_000);
    expect(healthy.invalid).toEqual([]);
  }, 180_000);

  it('the hanging endpoint never had more than WEBHOOK_MAX_IN_FLIGHT (4) attempts open; the failing ones were spaced out, not hammered', async () => {
    expect(t.config.webhookMaxInFlight).toBe(4);
    expect(hang.maxHolding).toBe(4);
    // Without the endpoint backoff, 24 deliveries retried from 100 ms, doubling, make over 100
    // attempts each in this time; probed one at a time from 3 failures on, far fewer.
    const elapsedS = (Date.now() - startedA) / 1000;
    for (const r of [err500, gone410]) {
      expect(r.received.length).toBeGreaterThanOrEqual(3);
      expect(r.received.length).toBeLessThan(RUNS_A);
    }
    expect(elapsedS).toBeGreaterThan(1);
    for (const r of [hang, err500, gone410]) expect(r.invalid).toEqual([]);
  });

  async function deliveries(endpointId: string): Promise<any[]> {
    const log = await t.call(KEYS.adminA, 'GET', `/v1/webhooks/${endpointId}/deliveries?limit=100`);
    expect(log.status).toBe(200);
    return log.body.data;
  }

  it('disabling the hanging endpoint ends its pending deliveries failed (endpoint_disabled): attempts 0 for those never attempted, no new request', async () => {
    const before = await deliveries(ids.hang);
    expect(before).toHaveLength(RUNS_A);
    expect(before.filter((d) => d.attempts === 0).length).toBeGreaterThan(0);
    const off = await t.call(KEYS.adminA, 'POST', `/v1/webhooks/${ids.hang}`, { enabled: false });
    expect(off.status).toBe(200);
    expect(off.body.enabled).toBe(false);
    const heldAtDisable = hang.held.length;
    // Those not in flight end at once (the update's statement); those in flight once their attempt times out (10 s).
    const now = await deliveries(ids.hang);
    const neverTried = now.filter((d) => d.attempts === 0);
    expect(neverTried.length).toBeGreaterThan(0);
    for (const d of neverTried) expect(d).toMatchObject({ status: 'failed', last_error: 'endpoint_disabled', attempts: 0, next_attempt_at: null, last_response_status: null });
    const settled = await until('every delivery of the disabled endpoint ended', 20_000, async () => {
      const all = await deliveries(ids.hang);
      return all.every((d) => d.status !== 'pending') ? all : undefined;
    });
    expect(settled).toHaveLength(RUNS_A);
    for (const d of settled) expect(d).toMatchObject({ status: 'failed', last_error: 'endpoint_disabled', next_attempt_at: null });
    // attempts is what was really sent: every counted attempt reached the receiver, and no request was made after the disable.
    const sent = new Map<string, number>();
    for (const h of hang.held) sent.set(h.webhookId, (sent.get(h.webhookId) ?? 0) + 1);
    for (const d of settled) expect({ id: d.id, attempts: d.attempts }).toEqual({ id: d.id, attempts: sent.get(d.id) ?? 0 });
    expect(settled.filter((d) => d.attempts === 0).length).toBe(RUNS_A - sent.size);
    expect(hang.held.length).toBe(heldAtDisable);
  }, 60_000);

  it("deleting the 410 endpoint ends its pending deliveries the same way (kept, though no route shows them any more)", async () => {
    const before = await deliveries(ids.gone410);
    expect(before.some((d) => d.status === 'pending')).toBe(true);
    expect((await t.call(KEYS.adminA, 'DELETE', `/v1/webhooks/${ids.gone410}`)).status).toBe(204);
    expect((await t.call(KEYS.adminA, 'GET', `/v1/webhooks/${ids.gone410}/deliveries`)).status).toBe(404);
    const m = t.app.get(UnitOfWork).manager;
    const rows: Array<{ status: string; last_error: string; attempts: number }> = await until('every delivery of the deleted endpoint ended', 20_000, async () => {
      const r = await m.query(`SELECT status, last_error, attempts FROM webhook_deliveries WHERE endpoint_id = $1`, [ids.gone410]);
      return r.every((x: any) => x.status !== 'pending') ? r : undefined;
    });
    expect(rows).toHaveLength(RUNS_A);
    for (const r of rows) expect(r).toMatchObject({ status: 'failed', last_error: 'endpoint_disabled' });
    const sent = new Set(gone410.received.map((x) => x.webhookId)).size;
    expect(rows.filter((r) => Number(r.attempts) === 0).length).toBe(RUNS_A - sent);
    const countAfter = gone410.received.length;
    await new Promise((r) => setTimeout(r, 500));
    expect(gone410.received.length).toBe(countAfter);
    // Its secret is gone with it (the row keeps no usable key).
    const [ep] = await m.query(`SELECT secret_ciphertext, enabled FROM webhook_endpoints WHERE id = $1`, [ids.gone410]);
    expect(ep).toMatchObject({ secret_ciphertext: '', enabled: false });
  }, 60_000);
});
