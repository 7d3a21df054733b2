import { createServer } from 'node:net';
import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { createSession, isTerminal, script, startRun, userInput, waitForRun } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';
import { WebhookReceiver } from '../helpers/webhook-receiver';

const ALL = ['run.completed', 'run.failed', 'run.cancelled', 'run.expired', 'run.terminated', 'run.requires_action', 'attachment.ready', 'attachment.rejected'];
const EICAR = 'X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*';
const waiting = (status: string) => (r: any) => r.status === status || isTerminal(r);

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** The delivery log entry of one event, once its outcome is recorded (the receiver may see the attempt first). */
async function settledDelivery(t: TestApp, endpointId: string, id: string): Promise<any> {
  const until = Date.now() + 10_000;
  for (;;) {
    const log = await t.call(KEYS.adminA, 'GET', `/v1/webhooks/${endpointId}/deliveries?limit=100`);
    expect(log.status).toBe(200);
    const entry = log.body.data.find((d: any) => d.id === id);
    if (entry && entry.status !== 'pending') return entry;
    if (Date.now() > until) throw new Error(`delivery ${id} not settled: ${JSON.stringify(entry)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function upload(t: TestApp, key: string, bytes: string, filename: string) {
  const form = new FormData();
  form.append('file', new Blob([Buffer.from(bytes)], { type: 'text/plain' }), filename);
  const res = await fetch(`${t.url}/v1/attachments`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'idempotency-key': `up-${Math.random()}` }, body: form });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

describe('webhooks (e2e, a real receiver verifying every delivery with standardwebhooks)', () => {
  let t: TestApp;
  const main = new WebhookReceiver();
  const other = new WebhookReceiver();
  let endpointId: string;
  let endpointB: string;

  beforeAll(async () => {
    t = await startTestApp({ WEBHOOK_RETRY_BASE_MS: '100', APPROVAL_TTL_MS: '60000' });
    await main.start();
    await other.start();
    const created = await t.call(KEYS.adminA, 'POST', '/v1/webhooks', { url: main.url, events: ALL, description: 'all events' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ object: 'webhook_endpoint', url: main.url, events: ALL, enabled: true, description: 'all events' });
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    main.secret = created.body.secret;
    endpointId = created.body.id;
    // Tenant B subscribes to everything too: it must never hear of tenant A's runs.
    const b = await t.call(KEYS.adminB, 'POST', '/v1/webhooks', { url: other.url, events: ALL });
    expect(b.status).toBe(201);
    other.secret = b.body.secret;
    endpointB = b.body.id;
  }, 90_000);
  afterAll(async () => {
    await t.close();
    await main.stop();
    await other.stop();
  });

  const key = KEYS.memberA1;

  async function expectDelivered(type: string, runId: string) {
    const [got] = await main.waitFor(type, runId);
    expect(got.payload).toMatchObject({ type, tenant_id: 'tenant_a', data: { object: { id: runId, object: 'run' } } });
    expect(got.payload.id).toBe(got.webhookId);
    expect(got.payload.id).toMatch(/^whevt_/);
    expect(Number.isNaN(Date.parse(got.payload.created_at))).toBe(false);
    return got;
  }

  it('endpoint admin routes: secret shown on create and rotate only; member 403; other tenant sees none; URL outside the allow-list 400', async () => {
    const got = await t.call(KEYS.adminA, 'GET', `/v1/webhooks/${endpointId}`);
    expect(got.status).toBe(200);
    expect(got.body.secret).toBeUndefined();
    const list = await t.call(KEYS.adminA, 'GET', '/v1/webhooks');
    expect(list.body.data.map((w: any) => w.id)).toEqual([endpointId]);
    expect(JSON.stringify(list.body)).not.toContain('whsec_');

    expect((await t.call(KEYS.memberA1, 'GET', '/v1/webhooks')).status).toBe(403);
    expect((await t.call(KEYS.memberA1, 'POST', '/v1/webhooks', { url: main.url, events: ['run.completed'] })).status).toBe(403);
    expect((await t.call(KEYS.memberA1, 'GET', `/v1/webhooks/${endpointId}/deliveries`)).status).toBe(403);

    const bList = await t.call(KEYS.adminB, 'GET', '/v1/webhooks');
    expect(bList.body.data.map((w: any) => w.id)).not.toContain(endpointId);
    expect((await t.call(KEYS.adminB, 'GET', `/v1/webhooks/${endpointId}`)).status).toBe(404);
    expect((await t.call(KEYS.adminB, 'GET', `/v1/webhooks/${endpointId}/deliveries`)).status).toBe(404);
    expect((await t.call(KEYS.adminB, 'DELETE', `/v1/webhooks/${endpointId}`)).status).toBe(404);
    expect((await t.call(KEYS.adminB, 'POST', `/v1/webhooks/${endpointId}/rotate_secret`)).status).toBe(404);

    const outside = await t.call(KEYS.adminA, 'POST', '/v1/webhooks', { url: 'https://hooks.example.com/x', events: ['run.completed'] });
    expect(outside.status).toBe(400);
    expect(outside.body.error.code).toBe('invalid_request');
    const sneaky = await t.call(KEYS.adminA, 'POST', '/v1/webhooks', { url: 'http://127.0.0.1.evil.example/x', events: ['run.completed'] });
    expect(sneaky.status).toBe(400);
    const badEvent = await t.call(KEYS.adminA, 'POST', '/v1/webhooks', { url: main.url, events: ['run.nope'] });
    expect(badEvent.status).toBe(400);
    const upd = await t.call(KEYS.adminA, 'POST', `/v1/webhooks/${endpointId}`, { url: 'https://hooks.example.com/x' });
    expect(upd.status).toBe(400);
    // An update that changes nothing, or sets a field that cannot be empty to null, is 400 naming the fields (not a 200 no-op).
    const empty = await t.call(KEYS.adminA, 'POST', `/v1/webhooks/${endpointId}`, {});
    expect(empty.status).toBe(400);
    expect(empty.body.error).toMatchObject({ code: 'invalid_request', type: 'invalid_request', retryable: false });
    expect(empty.body.error.details.errors).toEqual([{ field: 'body', message: 'must set at least one of url, events, description, enabled' }]);
    expect(empty.headers.get('x-request-id')).toBe(empty.body.error.request_id);
    const nulls = await t.call(KEYS.adminA, 'POST', `/v1/webhooks/${endpointId}`, { events: null, enabled: null });
    expect(nulls.status).toBe(400);
    expect(nulls.body.error.code).toBe('invalid_request');
    expect(nulls.body.error.details.errors.map((e: any) => e.field)).toEqual(['events', 'enabled']);
    expect(nulls.body.error.details.errors[0].message).toBe('events must not be null (leave it out to keep it unchanged)');
    const nullUrl = await t.call(KEYS.adminA, 'POST', `/v1/webhooks/${endpointId}`, { url: null }, { 'idempotency-key': `wh-null-${Math.random()}` });
    expect(nullUrl.status).toBe(400);
    expect(nullUrl.body.error.details.errors).toEqual([{ field: 'url', message: 'url must not be null (leave it out to keep it unchanged)' }]);
    expect((await t.call(KEYS.adminA, 'GET', `/v1/webhooks/${endpointId}`)).body).toMatchObject({ url: main.url, events: ALL, enabled: true, description: 'all events' });

    // Create, update, rotate and delete a second endpoint; each change is in the audit trail.
    const w = await t.call(KEYS.adminA, 'POST', '/v1/webhooks', { url: `${main.url}/2`, events: ['run.completed'] });
    expect(w.status).toBe(201);
    const u = await t.call(KEYS.adminA, 'POST', `/v1/webhooks/${w.body.id}`, { events: ['run.failed'], enabled: false, description: 'x' });
    expect(u.status).toBe(200);
    expect(u.body).toMatchObject({ events: ['run.failed'], enabled: false, description: 'x', url: `${main.url}/2` });
    // description is the one field null may clear.
    const cleared = await t.call(KEYS.adminA, 'POST', `/v1/webhooks/${w.body.id}`, { description: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject({ description: null, events: ['run.failed'], enabled: false });
    const r = await t.call(KEYS.adminA, 'POST', `/v1/webhooks/${w.body.id}/rotate_secret`);
    expect(r.status).toBe(200);
    expect(r.body.secret).toMatch(/^whsec_/);
    expect(r.body.secret).not.toBe(w.body.secret);
    expect((await t.call(KEYS.adminA, 'DELETE', `/v1/webhooks/${w.body.id}`)).status).toBe(204);
    expect((await t.call(KEYS.adminA, 'GET', `/v1/webhooks/${w.body.id}`)).status).toBe(404);
    const until = Date.now() + 5000;
    let audited: any[] = [];
    while (Date.now() < until) {
      const a = await t.call(KEYS.adminA, 'GET', `/v1/admin/audit?limit=100`);
      audited = a.body.data.filter((rec: any) => JSON.stringify(rec).includes(w.body.id));
      if (audited.length >= 4) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    expect(audited.length).toBeGreaterThanOrEqual(4);
    expect(JSON.stringify(audited)).not.toContain(w.body.secret.slice(6));
    expect(JSON.stringify(audited)).not.toContain(r.body.secret.slice(6));
  });

  it('run.completed, run.failed, run.terminated: signed, with the run as an admin GETs it', async () => {
    const sid = await createSession(t, key);
    const ok = await startRun(t, key, sid, { input: userInput(script([{ text: 'hello hook' }])), mode: 'sync' });
    expect(ok.body.status).toBe('completed');
    const got = await expectDelivered('run.completed', ok.body.id);
    const adminView = await t.call(KEYS.adminA, 'GET', `/v1/runs/${ok.body.id}`);
    expect(got.payload.data.object).toEqual(adminView.body);

    const failed = await startRun(t, key, sid, { input: userInput(script([{ error: { code: 'model_timeout' } }])), mode: 'sync' });
    expect(failed.body.status).toBe('failed');
    const f = await expectDelivered('run.failed', failed.body.id);
    expect(f.payload.data.object).toMatchObject({ status: 'failed', error: { code: 'model_timeout' } });

    const terminated = await startRun(t, key, sid, {
      input: userInput(script([{ tool_calls: [{ name: 'get_time', arguments: {} }] }, { text: 'never' }])),
      limits: { max_steps: 1 },
      mode: 'sync',
    });
    expect(terminated.body.status).toBe('terminated');
    const term = await expectDelivered('run.terminated', terminated.body.id);
    expect(term.payload.data.object).toMatchObject({ status: 'terminated', termination_reason: 'max_steps' });

    // The delivery log says what happened.
    const entry = await settledDelivery(t, endpointId, got.webhookId);
    expect(entry).toMatchObject({ object: 'webhook_delivery', type: 'run.completed', object_id: ok.body.id, status: 'delivered', attempts: 1, last_response_status: 200, last_response_excerpt: 'ok', next_attempt_at: null });
  });

  it('run.requires_action for an approval and for a client tool; run.cancelled', async () => {
    const sid = await createSession(t, key);
    const a = await startRun(t, key, sid, { input: userInput('Please help with order O-1001, it has not arrived') });
    const waitingRun = await waitForRun(t, key, a.body.run_id, waiting('waiting_for_approval'));
    expect(waitingRun.status).toBe('waiting_for_approval');
    const ra = await expectDelivered('run.requires_action', a.body.run_id);
    expect(ra.payload.data.object).toMatchObject({ status: 'waiting_for_approval', pending_approvals: [expect.objectContaining({ tool_name: 'create_ticket' })] });
    // Cancelled while waiting: run.cancelled.
    expect((await t.call(key, 'POST', `/v1/runs/${a.body.run_id}/cancel`)).status).toBeLessThan(300);
    await expectDelivered('run.cancelled', a.body.run_id);

    const sid2 = await createSession(t, key);
    const c = await startRun(t, key, sid2, { input: userInput(script([{ tool_calls: [{ name: 'lookup_customer', arguments: { email: 'ada@example.com' } }] }, { text: 'found' }])) });
    expect((await waitForRun(t, key, c.body.run_id, waiting('waiting_for_tool'))).status).toBe('waiting_for_tool');
    const rc = await expectDelivered('run.requires_action', c.body.run_id);
    expect(rc.payload.data.object.status).toBe('waiting_for_tool');
  });

  it('attachment.ready and attachment.rejected', async () => {
    const ready = await upload(t, key, 'plain notes', 'notes.txt');
    const rejected = await upload(t, key, EICAR, 'eicar.txt');
    const [r] = await main.waitFor('attachment.ready', ready);
    expect(r.payload.data.object).toMatchObject({ id: ready, object: 'attachment', status: 'ready' });
    const [x] = await main.waitFor('attachment.rejected', rejected);
    expect(x.payload.data.object).toMatchObject({ id: rejected, status: 'rejected', rejection_reason: 'malware_detected' });
  });

  it('a receiver that answers 500 twice then 200 gets the event on the third attempt, with the same webhook-id', async () => {
    const flaky = await new WebhookReceiver().start();
    try {
      flaky.answer = (n) => (n <= 2 ? 500 : 200);
      const w = await t.call(KEYS.adminA, 'POST', '/v1/webhooks', { url: flaky.url, events: ['run.completed'] });
      flaky.secret = w.body.secret;
      const sid = await createSession(t, key);
      const run = await startRun(t, key, sid, { input: userInput(script([{ text: 'retry me' }])), mode: 'sync' });
      const got = await flaky.waitFor('run.completed', run.body.id, (all) => all.some((r) => r.status === 200));
      expect(got.map((r) => r.status)).toEqual([500, 500, 200]);
      expect(new Set(got.map((r) => r.webhookId)).size).toBe(1);
      expect(await settledDelivery(t, w.body.id, got[0].webhookId)).toMatchObject({ status: 'delivered', attempts: 3, last_response_status: 200 });
      const log = await t.call(KEYS.adminA, 'GET', `/v1/webhooks/${w.body.id}/deliveries`);
      expect(log.body.data).toHaveLength(1);
    } finally {
      await flaky.stop();
    }
  });

  it('a receiver that is down during a run and comes back gets every event', async () => {
    const port = await freePort();
    const late = new WebhookReceiver();
    const w = await t.call(KEYS.adminA, 'POST', '/v1/webhooks', { url: `http://127.0.0.1:${port}/hook`, events: ['run.completed', 'run.failed'] });
    expect(w.status).toBe(201);
    late.secret = w.body.secret;
    const sid = await createSession(t, key);
    const one = await startRun(t, key, sid, { input: userInput(script([{ text: 'while down' }])), mode: 'sync' });
    const two = await startRun(t, key, sid, { input: userInput(script([{ error: { code: 'model_timeout' } }])), mode: 'sync' });
    expect([one.body.status, two.body.status]).toEqual(['completed', 'failed']);
    // Attempts fail while nothing listens; the log shows them pending with a next attempt.
    const until = Date.now() + 10_000;
    let log: any;
    for (;;) {
      log = await t.call(KEYS.adminA, 'GET', `/v1/webhooks/${w.body.id}/deliveries`);
      if (log.body.data.length === 2 && log.body.data.every((d: any) => d.attempts >= 2)) break;
      if (Date.now() > until) throw new Error(`no failed attempts: ${log.text}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    for (const d of log.body.data) {
      expect(d).toMatchObject({ status: 'pending', last_error: 'network', last_response_status: null });
      expect(Date.parse(d.next_attempt_at)).toBeGreaterThan(0);
    }
    await late.start(port);
    try {
      await late.waitFor('run.completed', one.body.id, undefined, 30_000);
      await late.waitFor('run.failed', two.body.id, undefined, 30_000);
      expect(late.invalid).toEqual([]);
    } finally {
      await late.stop();
    }
  }, 60_000);

  /** Tables (and idempotency records) whose text holds `needle` anywhere: every base table, every column. */
  async function tablesHolding(needle: string): Promise<string[]> {
    const m = t.app.get(UnitOfWork).manager;
    const tables: Array<{ table_name: string }> = await m.query(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
    );
    expect(tables.map((x) => x.table_name)).toEqual(expect.arrayContaining(['idempotency_records', 'webhook_endpoints', 'audit_records']));
    const hits: string[] = [];
    for (const { table_name } of tables) {
      const [{ n }] = await m.query(`SELECT count(*)::int AS n FROM "${table_name}" x WHERE x::text LIKE $1`, [`%${needle}%`]);
      if (n > 0) hits.push(table_name);
    }
    return hits;
  }

  async function idempotencyRecord(key: string): Promise<{ response_body: string; response_secret_ref: unknown }> {
    const m = t.app.get(UnitOfWork).manager;
    const rows = await m.query(`SELECT response_body, response_secret_ref FROM idempotency_records WHERE idem_key = $1`, [key]);
    expect(rows).toHaveLength(1);
    const ref = rows[0].response_secret_ref;
    return { response_body: rows[0].response_body, response_secret_ref: typeof ref === 'string' ? JSON.parse(ref) : ref };
  }

  it('Idempotency-Key on create and rotate_secret: a retry gets the same endpoint and secret, which is stored nowhere; after a later rotation the replay withholds it', async () => {
    const createKey = `wh-create-${Math.random()}`;
    const body = { url: `${main.url}/idem`, events: ['run.expired'] };
    const first = await t.call(KEYS.adminA, 'POST', '/v1/webhooks', body, { 'idempotency-key': createKey });
    expect(first.status).toBe(201);
    expect(first.body.secret).toMatch(/^whsec_/);
    const again = await t.call(KEYS.adminA, 'POST', '/v1/webhooks', body, { 'idempotency-key': createKey });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('idempotent-secret-withheld')).toBeNull();
    expect(again.text).toBe(first.text); // same endpoint id, same secret, byte-for-byte
    const other = await t.call(KEYS.adminA, 'POST', '/v1/webhooks', { ...body, events: ['run.failed'] }, { 'idempotency-key': createKey });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('idempotency_conflict');
    const list = await t.call(KEYS.adminA, 'GET', '/v1/webhooks?limit=100');
    expect(list.body.data.filter((w: any) => w.url === body.url)).toHaveLength(1);
    const id = first.body.id;

    // The record keeps the answer with the secret nulled and a reference to it (endpoint, version): not the secret.
    const created = await idempotencyRecord(createKey);
    expect(JSON.parse(created.response_body)).toEqual({ ...first.body, secret: null });
    expect(created.response_secret_ref).toEqual({ webhook_id: id, secret_version: 1 });
    const createdSecret = first.body.secret.slice('whsec_'.length);
    expect(await tablesHolding(createdSecret)).toEqual([]);
    expect(await tablesHolding(id)).toEqual(expect.arrayContaining(['idempotency_records', 'webhook_endpoints'])); // the search does find what is there

    const rotateKey = `wh-rotate-${Math.random()}`;
    const rotated = await t.call(KEYS.adminA, 'POST', `/v1/webhooks/${id}/rotate_secret`, undefined, { 'idempotency-key': rotateKey });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(first.body.secret);
    const rotatedAgain = await t.call(KEYS.adminA, 'POST', `/v1/webhooks/${id}/rotate_secret`, undefined, { 'idempotency-key': rotateKey });
    expect(rotatedAgain.status).toBe(200);
    expect(rotatedAgain.headers.get('idempotent-replayed')).toBe('true');
    expect(rotatedAgain.text).toBe(rotated.text); // not rotated a second time: the same secret
    const rotateRecord = await idempotencyRecord(rotateKey);
    expect(JSON.parse(rotateRecord.response_body).secret).toBeNull();
    expect(rotateRecord.response_secret_ref).toEqual({ webhook_id: id, secret_version: 2 });
    expect(await tablesHolding(rotated.body.secret.slice('whsec_'.length))).toEqual([]);

    // The create's secret is no longer the endpoint's: its replay withholds it (never hands out the current one).
    const stale = await t.call(KEYS.adminA, 'POST', '/v1/webhooks', body, { 'idempotency-key': createKey });
    expect(stale.status).toBe(201);
    expect(stale.headers.get('idempotent-replayed')).toBe('true');
    expect(stale.headers.get('idempotent-secret-withheld')).toBe('rotated');
    expect(stale.body).toEqual({ ...first.body, secret: null });

    // A later rotation (no key) supersedes the rotate answer too.
    const later = await t.call(KEYS.adminA, 'POST', `/v1/webhooks/${id}/rotate_secret`);
    expect(later.status).toBe(200);
    const staleRotate = await t.call(KEYS.adminA, 'POST', `/v1/webhooks/${id}/rotate_secret`, undefined, { 'idempotency-key': rotateKey });
    expect(staleRotate.status).toBe(200);
    expect(staleRotate.headers.get('idempotent-secret-withheld')).toBe('rotated');
    expect(staleRotate.body).toEqual({ ...rotated.body, secret: null });
    expect(staleRotate.text).not.toContain(later.body.secret);

    // Deleted since: withheld as well.
    expect((await t.call(KEYS.adminA, 'DELETE', `/v1/webhooks/${id}`)).status).toBe(204);
    const gone = await t.call(KEYS.adminA, 'POST', '/v1/webhooks', body, { 'idempotency-key': createKey });
    expect(gone.status).toBe(201);
    expect(gone.headers.get('idempotent-secret-withheld')).toBe('deleted');
    expect(gone.body.secret).toBeNull();
    expect((await t.call(KEYS.adminA, 'GET', '/v1/webhooks?limit=100')).body.data.filter((w: any) => w.url === body.url)).toHaveLength(0);
  });

  it('a stored error answer of rotate_secret (404) replays as it was, with no secret to fill in', async () => {
    const k = `wh-404-${Math.random()}`;
    const path = '/v1/webhooks/wh_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B/rotate_secret'; // well-formed, nobody's
    const missing = await t.call(KEYS.adminA, 'POST', path, undefined, { 'idempotency-key': k });
    expect(missing.status).toBe(404);
    const replay = await t.call(KEYS.adminA, 'POST', path, undefined, { 'idempotency-key': k });
    expect(replay.status).toBe(404);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.text).toBe(missing.text);
    expect(replay.headers.get('idempotent-secret-withheld')).toBeNull();
  });

  it('an event no enabled endpoint wants leaves the outbox without a delivery', async () => {
    const off = await t.call(KEYS.adminB, 'POST', `/v1/webhooks/${endpointB}`, { enabled: false });
    expect(off.status).toBe(200);
    const sid = await createSession(t, KEYS.memberB);
    const run = await startRun(t, KEYS.memberB, sid, { input: userInput(script([{ text: 'nobody listens' }])), mode: 'sync' });
    expect(run.body.status).toBe('completed');
    const uow = t.app.get(UnitOfWork);
    const until = Date.now() + 10_000;
    for (;;) {
      const [{ n }] = await uow.manager.query(`SELECT count(*)::int AS n FROM integration_events WHERE object_id = $1`, [run.body.id]);
      if (n === 0) break;
      if (Date.now() > until) throw new Error('the event stayed in the outbox');
      await new Promise((r) => setTimeout(r, 50));
    }
    const log = await t.call(KEYS.adminB, 'GET', `/v1/webhooks/${endpointB}/deliveries`);
    expect(log.status).toBe(200);
    expect(log.body.data).toEqual([]);
  });

  it('every delivery verified; the other tenant heard nothing of tenant A; attempts, failures and the backlog are metrics', async () => {
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(metrics).toMatch(/agent_api_webhook_attempts_total\{outcome="delivered"\} [1-9]/);
    expect(metrics).toMatch(/agent_api_webhook_attempts_total\{outcome="http_error"\} [1-9]/);
    expect(metrics).toMatch(/agent_api_webhook_attempts_total\{outcome="network"\} [1-9]/);
    expect(metrics).toMatch(/agent_api_webhook_attempt_duration_seconds_count\{outcome="delivered"\} [1-9]/);
    expect(metrics).toMatch(/agent_api_outbox_backlog\{outbox="webhooks"\} \d+/);
    expect(main.invalid).toEqual([]);
    expect(main.received.length).toBeGreaterThanOrEqual(9);
    expect(main.received.every((r) => r.payload.tenant_id === 'tenant_a')).toBe(true);
    expect(other.received).toEqual([]);
    expect(other.invalid).toEqual([]);
  });
});
