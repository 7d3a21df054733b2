import { WebhookReceiver } from '../helpers/webhook-receiver';
import { ADMIN_KEY, createSession, freePort, freshDatabase, NodeProcess, requirePostgres, script, startNode, startRun, tempDir, until, waitForRunStatus } from './rel-helpers';

/**
 * Webhooks across processes (issue 20): `kill -9` of the node after the run committed and before
 * its delivery succeeded loses nothing (another node delivers it), and two nodes on one database
 * deliver each event once (no duplicate webhook-id) - every delivery verified with standardwebhooks.
 */
describe('webhooks: crash between commit and delivery, and two nodes', () => {
  const dirs = [tempDir(), tempDir(), tempDir(), tempDir()];
  let db: Awaited<ReturnType<typeof freshDatabase>> = null;
  const nodes: NodeProcess[] = [];
  // Retries ~3 s apart: once a failed attempt is recorded, the next claim is seconds away, so the
  // kill below lands between attempts (a kill during an attempt waits for its lease instead). The
  // lease is the least allowed: the 10 s attempt timeout + 5 s (the default is 20 s).
  const env = { WEBHOOK_RETRY_BASE_MS: '3000', WEBHOOK_LEASE_MS: '15000' };

  beforeAll(async () => {
    requirePostgres();
    db = await freshDatabase();
  });
  afterAll(async () => {
    for (const n of nodes) await n.kill9();
    await db?.drop();
    for (const d of dirs) d.remove();
  });

  it('kill -9 after the commit, receiver down: the event is delivered by the next node once the receiver is back', async () => {
    const a = await startNode({ name: 'wh-a', dataDir: dirs[0].path, databaseUrl: db!.url, env });
    nodes.push(a);
    const port = await freePort();
    const receiver = new WebhookReceiver();
    const w = await a.call('POST', '/v1/webhooks', { url: `http://127.0.0.1:${port}/hook`, events: ['run.completed'] }, {}, ADMIN_KEY);
    expect(w.status).toBe(201);
    receiver.secret = w.body.secret;
    const sid = await createSession(a);
    const r = await startRun(a, sid, script([{ text: 'before the crash' }]));
    await waitForRunStatus(a, r.body.run_id, (x) => x.status === 'completed');
    await until('a failed attempt, recorded', 10_000, async () => {
      const log = await a.call('GET', `/v1/webhooks/${w.body.id}/deliveries`, undefined, {}, ADMIN_KEY);
      const d = log.body.data[0];
      return d?.attempts >= 1 && d.last_error === 'network' ? true : undefined;
    });
    await a.kill9();
    await receiver.start(port);
    try {
      const b = await startNode({ name: 'wh-b', dataDir: dirs[1].path, databaseUrl: db!.url, env });
      nodes.push(b);
      const got = await receiver.waitFor('run.completed', r.body.run_id, undefined, 30_000);
      expect(got.filter((x) => x.status === 200)).toHaveLength(1);
      expect(receiver.invalid).toEqual([]);
    } finally {
      await receiver.stop();
    }
  }, 180_000);

  it('two nodes deliver each event once', async () => {
    const live = nodes.filter((n) => n.isRunning());
    const c = await startNode({ name: 'wh-c', dataDir: dirs[2].path, databaseUrl: db!.url, env });
    nodes.push(c);
    const [b] = live;
    const receiver = await new WebhookReceiver().start();
    try {
      const w = await b.call('POST', '/v1/webhooks', { url: receiver.url, events: ['run.completed'] }, {}, ADMIN_KEY);
      receiver.secret = w.body.secret;
      const runs: string[] = [];
      for (let i = 0; i < 12; i++) {
        const n = i % 2 ? b : c;
        const sid = await createSession(n);
        runs.push((await startRun(n, sid, script([{ text: `run ${i}` }]))).body.run_id);
      }
      for (const id of runs) await receiver.waitFor('run.completed', id, undefined, 30_000);
      await new Promise((r) => setTimeout(r, 1500));
      const ids = receiver.received.map((x) => x.webhookId);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids).toHaveLength(runs.length);
      expect(receiver.invalid).toEqual([]);
    } finally {
      await receiver.stop();
    }
  }, 180_000);
  it('kill -9 right after a run ends (its event may still be in the outbox, or its delivery claimed): the other node delivers it', async () => {
    const [b, c] = nodes.filter((n) => n.isRunning());
    const receiver = await new WebhookReceiver().start();
    try {
      const w = await b.call('POST', '/v1/webhooks', { url: receiver.url, events: ['run.completed'] }, {}, ADMIN_KEY);
      expect(w.status).toBe(201);
      receiver.secret = w.body.secret;
      const sid = await createSession(c);
      const r = await startRun(c, sid, script([{ text: 'kill me after the commit' }]));
      await waitForRunStatus(c, r.body.run_id, (x) => x.status === 'completed');
      await c.kill9();
      // A delivery claimed by the dead node is claimed again once its 15 s lease has passed.
      const got = await receiver.waitFor('run.completed', r.body.run_id, undefined, 45_000);
      expect(got.some((x) => x.status === 200)).toBe(true);
      expect(new Set(got.map((x) => x.webhookId)).size).toBe(1);
      expect(receiver.invalid).toEqual([]);
    } finally {
      await receiver.stop();
    }
  }, 90_000);

  it('kill -9 during an attempt (the receiver holds the request, unanswered): another node posts it again once the lease has passed', async () => {
    const [b] = nodes.filter((n) => n.isRunning());
    const receiver = new WebhookReceiver();
    receiver.answer = () => (receiver.held.length === 0 ? 'hold' : 200);
    await receiver.start();
    try {
      const w = await b.call('POST', '/v1/webhooks', { url: receiver.url, events: ['run.completed'] }, {}, ADMIN_KEY);
      expect(w.status).toBe(201);
      receiver.secret = w.body.secret;
      const sid = await createSession(b);
      const r = await startRun(b, sid, script([{ text: 'kill me mid-attempt' }]));
      await until('the attempt is in flight', 20_000, async () => (receiver.held.some((h) => h.payload.data.object.id === r.body.run_id) ? true : undefined));
      const killed = Date.now();
      await b.kill9();
      const d = await startNode({ name: 'wh-d', dataDir: dirs[3].path, databaseUrl: db!.url, env });
      nodes.push(d);
      const got = await receiver.waitFor('run.completed', r.body.run_id, undefined, 45_000);
      const waitedMs = Date.now() - killed;
      expect(got.filter((x) => x.status === 200)).toHaveLength(1);
      expect(got[0].webhookId).toBe(receiver.held[0].webhookId);
      // The 15 s lease (counted from the claim, before the kill) plus start-up and polling: not the minute it used to be.
      expect(waitedMs).toBeLessThan(30_000);
      const entry = await until('the outcome, recorded', 10_000, async () => {
        const log = await d.call('GET', `/v1/webhooks/${w.body.id}/deliveries`, undefined, {}, ADMIN_KEY);
        return log.body.data[0]?.status === 'delivered' ? log.body.data[0] : undefined;
      });
      expect(entry).toMatchObject({ attempts: 2, last_response_status: 200 });
      expect(receiver.invalid).toEqual([]);
    } finally {
      await receiver.stop();
    }
  }, 90_000);
});
