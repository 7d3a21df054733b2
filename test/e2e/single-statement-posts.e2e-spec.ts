import { DataSource } from 'typeorm';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';
import { createSession, script, startRun, userInput } from '../helpers/runs';

/**
 * POST /v1/sessions and POST /v1/sessions/{id}/runs write the change, the key's completed record
 * and the request's audit record in ONE statement when the key is fresh (IdempotencyOptions.batch);
 * a taken key or a failed operation goes the usual way (claim, then replay or run again). What a
 * client and an auditor see must be exactly what the transaction path gave.
 */
describe('single-statement POSTs (create session, create run)', () => {
  let t: TestApp;
  let db: DataSource;
  let n = 0;
  const newKey = () => `single-${Date.now()}-${++n}`;

  beforeAll(async () => {
    t = await startTestApp();
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    await t.close();
  });

  async function count(sql: string, params: unknown[]): Promise<number> {
    const rows: Array<{ n: string }> = await db.query(sql, params);
    return Number(rows[0].n);
  }
  /** Audit records of a request, by its x-request-id (after chaining what is queued). */
  async function auditOf(requestId: string): Promise<any[]> {
    const res = await t.call(KEYS.adminA, 'GET', `/v1/admin/audit?limit=100&order=asc`);
    expect(res.status).toBe(200);
    const all: any[] = [];
    let page = res.body;
    for (let i = 0; i < 50; i++) {
      all.push(...page.data);
      if (!page.has_more) break;
      page = (await t.call(KEYS.adminA, 'GET', `/v1/admin/audit?limit=100&order=asc&after=${page.last_id}`)).body;
    }
    return all.filter((r) => r.request_id === requestId);
  }

  it('a created session has its key completed and exactly one audit record, and a retry replays it', async () => {
    const key = newKey();
    const res = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', { title: 'single one' }, { 'idempotency-key': key, 'x-request-id': `req-${key}` });
    expect(res.status).toBe(201);
    const rows: Array<{ state: string; response_status: number; response_body: string }> = await db.query(
      `SELECT state, response_status, response_body FROM idempotency_records WHERE idem_key = $1`,
      [key],
    );
    expect(rows).toEqual([{ state: 'completed', response_status: 201, response_body: res.text }]);
    const records = await auditOf(`req-${key}`);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ action: 'POST /v1/sessions', outcome: 'ok', status: 201, resource_id: res.body.id, session_id: res.body.id });
    const again = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', { title: 'single one' }, { 'idempotency-key': key });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(res.text);
    await expect(count(`SELECT count(*) AS n FROM sessions WHERE title = $1`, ['single one'])).resolves.toBe(1);
  });

  it('concurrent requests with one key create one session; every answer is that session', async () => {
    const key = newKey();
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => t.call(KEYS.memberA1, 'POST', '/v1/sessions', { title: 'single race' }, { 'idempotency-key': key })),
    );
    const ok = answers.filter((a) => a.status === 201);
    // A duplicate waits for the first statement's key and replays it (or, while it is claimed
    // the usual way, is told 409 idempotency_in_progress): never a second session.
    for (const a of answers) expect([201, 409]).toContain(a.status);
    expect(new Set(ok.map((a) => a.body.id)).size).toBe(1);
    expect(ok.filter((a) => a.headers.get('idempotent-replayed') !== 'true')).toHaveLength(1);
    await expect(count(`SELECT count(*) AS n FROM sessions WHERE title = $1`, ['single race'])).resolves.toBe(1);
  });

  it('a run accepted in one statement: input message, run, active run, completed key, one audit record', async () => {
    const sessionId = await createSession(t, KEYS.memberA1);
    const key = newKey();
    const res = await startRun(t, KEYS.memberA1, sessionId, { input: userInput(script([{ text: 'ok' }])) }, key);
    expect(res.status).toBe(202);
    const runId = res.body.run_id;
    await expect(count(`SELECT count(*) AS n FROM messages WHERE id = $1 AND run_id = $2 AND role = 'user'`, [res.body.user_message_id, runId])).resolves.toBe(1);
    const [key1] = await db.query(`SELECT state, response_status FROM idempotency_records WHERE idem_key = $1`, [key]);
    expect(key1).toEqual({ state: 'completed', response_status: 202 });
    const records = await auditOf(res.headers.get('x-request-id')!);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ action: 'POST /v1/sessions/:id/runs', outcome: 'ok', status: 202, run_id: runId, session_id: sessionId });
  });

  it('a 409 session_busy writes no run and no message, and (retryable, so not stored) the same key succeeds once the session is free', async () => {
    // `reject` explicitly: sessions steer by default (CONTRACT 7, seed 002).
    const sessionId = await createSession(t, KEYS.memberA1, { default_concurrency: 'reject' });
    const first = await startRun(t, KEYS.memberA1, sessionId, { input: userInput(script([{ sleep_ms: 1500, text: 'slow' }])) });
    expect(first.status).toBe(202);
    const userMessages = `SELECT count(*) AS n FROM messages WHERE session_id = $1 AND role = 'user'`;
    const key = newKey();
    const busy = await startRun(t, KEYS.memberA1, sessionId, { input: userInput('second') }, key);
    expect(busy.status).toBe(409);
    expect(busy.body.error).toMatchObject({ code: 'session_busy', details: { session_id: sessionId, active_run_id: first.body.run_id } });
    await expect(count(`SELECT count(*) AS n FROM runs WHERE session_id = $1`, [sessionId])).resolves.toBe(1);
    await expect(count(userMessages, [sessionId])).resolves.toBe(1);
    const [session] = await db.query(`SELECT active_run_id FROM sessions WHERE id = $1`, [sessionId]);
    expect(session.active_run_id).toBe(first.body.run_id);
    // Once the first run ended, the same key executes again.
    await t.call(KEYS.memberA1, 'POST', `/v1/runs/${first.body.run_id}/cancel`, {});
    for (let i = 0; i < 100; i++) {
      const [s] = await db.query(`SELECT active_run_id FROM sessions WHERE id = $1`, [sessionId]);
      if (s.active_run_id === null) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const retry = await startRun(t, KEYS.memberA1, sessionId, { input: userInput(script([{ text: 'ok' }])) }, key);
    expect(retry.status).toBe(202);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    await expect(count(`SELECT count(*) AS n FROM runs WHERE session_id = $1`, [sessionId])).resolves.toBe(2);
  });

  it('a stale expected_revision writes nothing and is a 409 session_conflict naming the current revision, replayed for its key', async () => {
    const sessionId = await createSession(t, KEYS.memberA1);
    const [s] = await db.query(`SELECT revision FROM sessions WHERE id = $1`, [sessionId]);
    const key = newKey();
    const stale = { input: userInput('hi'), expected_revision: s.revision + 3 };
    const res = await startRun(t, KEYS.memberA1, sessionId, stale, key);
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'session_conflict', details: { current_revision: s.revision, expected_revision: s.revision + 3 } });
    await expect(count(`SELECT count(*) AS n FROM runs WHERE session_id = $1`, [sessionId])).resolves.toBe(0);
    // Not retryable: stored for its key and replayed.
    const replay = await startRun(t, KEYS.memberA1, sessionId, stale, key);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.text).toBe(res.text);
    const ok = await startRun(t, KEYS.memberA1, sessionId, { input: userInput(script([{ text: 'ok' }])), expected_revision: s.revision });
    expect(ok.status).toBe(202);
  });

  it('a run on a session that is gone is 404 session_not_found', async () => {
    const sessionId = await createSession(t, KEYS.memberA1);
    await db.query(`DELETE FROM sessions WHERE id = $1`, [sessionId]);
    const res = await startRun(t, KEYS.memberA1, sessionId, { input: userInput('hi') });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('session_not_found');
  });

  it('a sync run (a transaction, not a batch) on a busy session or at a stale revision gets the same 409s and writes nothing', async () => {
    // `reject` explicitly: sessions steer by default (CONTRACT 7, seed 002).
    const sessionId = await createSession(t, KEYS.memberA1, { default_concurrency: 'reject' });
    const first = await startRun(t, KEYS.memberA1, sessionId, { input: userInput(script([{ sleep_ms: 5000, text: 'slow' }])) });
    expect(first.status).toBe(202);
    // The run's model turn appends its (streaming) assistant message 50 ms after the model is
    // called, which moves the session's revision: read the revision only once that happened, or
    // a slow machine reads it before and the 409 names the newer one.
    for (let i = 0; i < 200 && (await count(`SELECT count(*) AS n FROM messages WHERE run_id = $1 AND role = 'assistant'`, [first.body.run_id])) === 0; i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
    await expect(count(`SELECT count(*) AS n FROM messages WHERE run_id = $1 AND role = 'assistant'`, [first.body.run_id])).resolves.toBe(1);
    const busy = await startRun(t, KEYS.memberA1, sessionId, { input: userInput('second'), mode: 'sync', wait_timeout_ms: 100 });
    expect(busy.status).toBe(409);
    expect(busy.body.error).toMatchObject({ code: 'session_busy', details: { active_run_id: first.body.run_id } });
    const [s] = await db.query(`SELECT revision FROM sessions WHERE id = $1`, [sessionId]);
    const stale = await startRun(t, KEYS.memberA1, sessionId, { input: userInput('third'), mode: 'sync', wait_timeout_ms: 100, concurrency: 'enqueue', expected_revision: s.revision + 2 });
    expect(stale.status).toBe(409);
    expect(stale.body.error).toMatchObject({ code: 'session_conflict', details: { current_revision: s.revision } });
    await expect(count(`SELECT count(*) AS n FROM runs WHERE session_id = $1`, [sessionId])).resolves.toBe(1);
  });
});
