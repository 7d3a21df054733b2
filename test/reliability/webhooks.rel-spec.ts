import { WebhookReceiver } from '../helpers/webhook-receiver';
import { ADMIN_KEY, createSession, freePort, freshDatabase, NodeProcess, requirePostgres, script, startNode, startRun, tempDir, until, waitForRunStatus } from './rel-helpers';

/**
 * Webhooks across processes (issue 20): `kill -9` of the node after the run committed and before
 * its delivery succeeded loses nothing (another node delivers it), and two nodes on one database
 * deliver each event once (no duplicate webhook-id) - every delivery verified with standardwebhooks.
 */
describe('webhooks: crash between commit and delivery, and two nodes', () => {
  const dirs = [tempDir(), tempDir(), tempDir()];
  let db: Awaited<ReturnType<typeof freshDatabase>> = null;
  const nodes: NodeProcess[] = [];
  // Retries ~3 s apart: once a failed attempt is recorded, the next claim is seconds away, so the
  // kill below lands between attempts (a kill during an attempt waits for its 60 s lease instead).
  const env = { WEBHOOK_RETRY_BASE_MS: '3000' };

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
      // A delivery claimed by the dead node is claimed again once its 60 s lease has passed.
      const got = await receiver.waitFor('run.completed', r.body.run_id, undefined, 120_000);
      expect(got.some((x) => x.status === 200)).toBe(true);
      expect(new Set(got.map((x) => x.webhookId)).size).toBe(1);
      expect(receiver.invalid).toEqual([]);
    } finally {
      await receiver.stop();
    }
  }, 180_000);
});
