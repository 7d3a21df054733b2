import { DataSource } from 'typeorm';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

describe('foundation e2e: idempotency over HTTP', () => {
  let t: TestApp;
  let n = 0;
  const newKey = () => `idem-${Date.now()}-${++n}`;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  const post = (path: string, body: unknown, key: string | null, apiKey: string = KEYS.memberA1) =>
    t.call(apiKey, 'POST', path, body, key === null ? {} : { 'idempotency-key': key });

  async function countSessions(title: string): Promise<number> {
    const rows: Array<{ n: string }> = await t.app.get(DataSource).query(`SELECT count(*) AS n FROM sessions WHERE title = $1`, [title]);
    return Number(rows[0].n);
  }

  it('a retry replays the stored response byte-for-byte with Idempotent-Replayed: true, without executing again', async () => {
    const key = newKey();
    const first = await post('/v1/sessions', { title: 'replay me', metadata: { a: '1', b: '2' } }, key);
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    // Same body, other key order: same fingerprint.
    const again = await post('/v1/sessions', { metadata: { b: '2', a: '1' }, title: 'replay me' }, key);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
    expect(again.headers.get('content-type')).toMatch(/application\/json/);
    await expect(countSessions('replay me')).resolves.toBe(1);
  });

  it('the same key with another body is 409 idempotency_conflict, and nothing is created', async () => {
    const key = newKey();
    await post('/v1/sessions', { title: 'original' }, key);
    const res = await post('/v1/sessions', { title: 'different' }, key);
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'idempotency_conflict', type: 'conflict', retryable: false });
    await expect(countSessions('different')).resolves.toBe(0);
    // The conflict is not stored: the original still replays.
    const replay = await post('/v1/sessions', { title: 'original' }, key);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
  });

  it('without a key every POST executes', async () => {
    await post('/v1/sessions', { title: 'no key' }, null);
    await post('/v1/sessions', { title: 'no key' }, null);
    await expect(countSessions('no key')).resolves.toBe(2);
  });

  it('the same key on another route, another session or for another caller is a different key', async () => {
    const key = newKey();
    const s1 = await post('/v1/sessions', { title: 'scope one' }, key);
    const s2 = await post('/v1/sessions', { title: 'scope two' }, newKey());
    expect(s1.status).toBe(201);

    // Another route with the same key (and a body that would conflict if the scope were shared).
    const upd1 = await post(`/v1/sessions/${s1.body.id}`, { title: 'updated one' }, key);
    expect(upd1.status).toBe(200);
    expect(upd1.headers.get('idempotent-replayed')).toBeNull();
    // The same route template on another session.
    const upd2 = await post(`/v1/sessions/${s2.body.id}`, { title: 'updated one' }, key);
    expect(upd2.status).toBe(200);
    expect(upd2.headers.get('idempotent-replayed')).toBeNull();
    expect(upd2.body.id).toBe(s2.body.id);
    // Archive route.
    const arch = await post(`/v1/sessions/${s1.body.id}/archive`, {}, key);
    expect(arch.status).toBe(200);
    expect(arch.headers.get('idempotent-replayed')).toBeNull();
    // Another caller of the same tenant.
    const other = await post('/v1/sessions', { title: 'scope three' }, key, KEYS.memberA2);
    expect(other.status).toBe(201);
    expect(other.headers.get('idempotent-replayed')).toBeNull();
    expect(other.body.subject_id).toBe('user_a2');

    // And each replays within its own scope.
    const replayUpd = await post(`/v1/sessions/${s1.body.id}`, { title: 'updated one' }, key);
    expect(replayUpd.headers.get('idempotent-replayed')).toBe('true');
    expect(replayUpd.text).toBe(upd1.text);
    expect(replayUpd.body.revision).toBe(2);
  });

  it('a stored business error (404 agent_not_found) is replayed, even after the cause would be gone', async () => {
    const key = newKey();
    const first = await post('/v1/sessions', { agent_id: 'ghost_agent' }, key);
    expect(first.status).toBe(404);
    expect(first.body.error.code).toBe('agent_not_found');
    const again = await post('/v1/sessions', { agent_id: 'ghost_agent' }, key, KEYS.memberA1);
    expect(again.status).toBe(404);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
  });

  it('a stored 409 session_conflict on update is replayed', async () => {
    const s = (await post('/v1/sessions', { title: 'conflicted' }, null)).body;
    await post(`/v1/sessions/${s.id}`, { title: 'moved on' }, null);
    const key = newKey();
    const first = await post(`/v1/sessions/${s.id}`, { title: 'late', expected_revision: 1 }, key);
    expect(first.status).toBe(409);
    const again = await post(`/v1/sessions/${s.id}`, { title: 'late', expected_revision: 1 }, key);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
  });

  it('a 400 validation error is not stored: a corrected retry with the same key succeeds', async () => {
    const key = newKey();
    const bad = await post(`/v1/sessions`, { title: 'x'.repeat(300) }, key);
    expect(bad.status).toBe(400);
    const badAgain = await post(`/v1/sessions`, { title: 'x'.repeat(300) }, key);
    expect(badAgain.status).toBe(400);
    expect(badAgain.headers.get('idempotent-replayed')).toBeNull();
    const rows: Array<{ n: string }> = await t.app.get(DataSource).query(`SELECT count(*) AS n FROM idempotency_records WHERE idem_key = $1`, [key]);
    expect(Number(rows[0].n)).toBe(0);
  });

  it('an unknown model (400 raised by the handler) is not stored either', async () => {
    const s = (await post('/v1/sessions', {}, null)).body;
    const key = newKey();
    const bad = await post(`/v1/sessions/${s.id}`, { agent: { model: 'nope' } }, key);
    expect(bad.status).toBe(400);
    const retry = await post(`/v1/sessions/${s.id}`, { agent: { model: 'nope' } }, key);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
  });

  it('a 401 is not stored', async () => {
    const key = newKey();
    const res = await post('/v1/sessions', { title: 'unauth' }, key, 'wrong-key-0000');
    expect(res.status).toBe(401);
    const rows: Array<{ n: string }> = await t.app.get(DataSource).query(`SELECT count(*) AS n FROM idempotency_records WHERE idem_key = $1`, [key]);
    expect(Number(rows[0].n)).toBe(0);
  });

  it.each([['x'.repeat(256)], ['tab\tkey']])('an invalid Idempotency-Key %j is 400 invalid_request', async (key) => {
    const res = await fetch(`${t.url}/v1/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEYS.memberA1}`, 'content-type': 'application/json', 'idempotency-key': key },
      body: '{}',
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; details: { errors: Array<{ field: string }> } } };
    expect(body.error.code).toBe('invalid_request');
    expect(body.error.details.errors[0].field).toBe('Idempotency-Key');
  });
});
