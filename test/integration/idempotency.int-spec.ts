import { DataSource } from 'typeorm';
import { IdempotencyPurger } from '../../src/modules/idempotency/application/idempotency-purger';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

describe('idempotency against the database', () => {
  let t: TestApp;
  let db: DataSource;

  beforeAll(async () => {
    t = await startTestApp();
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    await t.close();
  });

  async function sessionsTitled(title: string): Promise<number> {
    const rows: Array<{ n: string }> = await db.query(`SELECT count(*) AS n FROM sessions WHERE title = $1`, [title]);
    return Number(rows[0].n);
  }

  it('20 concurrent POST /v1/sessions with one key and body execute exactly once', async () => {
    const key = `race-${Date.now()}`;
    const body = { title: 'race title', metadata: { n: '1' } };
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => t.call(KEYS.memberA1, 'POST', '/v1/sessions', body, { 'idempotency-key': key })),
    );

    await expect(sessionsTitled('race title')).resolves.toBe(1);

    const created = responses.filter((r) => r.status === 201);
    const inProgress = responses.filter((r) => r.status === 409);
    expect(created.length + inProgress.length).toBe(20);
    expect(created.length).toBeGreaterThanOrEqual(1);
    const firsts = created.filter((r) => r.headers.get('idempotent-replayed') !== 'true');
    expect(firsts).toHaveLength(1);
    const original = firsts[0].text;
    for (const r of created) expect(r.text).toBe(original);
    for (const r of inProgress) {
      expect(r.body.error).toMatchObject({ code: 'idempotency_in_progress', retryable: true });
      expect(r.headers.get('retry-after')).toBe('1');
    }

    const retry = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', { metadata: { n: '1' }, title: 'race title' }, { 'idempotency-key': key });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.text).toBe(original);
    await expect(sessionsTitled('race title')).resolves.toBe(1);

    const records: Array<{ n: string }> = await db.query(`SELECT count(*) AS n FROM idempotency_records WHERE idem_key = $1`, [key]);
    expect(Number(records[0].n)).toBe(1);
  });

  it('the TTL purge deletes expired records and a purged key is new again', async () => {
    const key = `ttl-${Date.now()}`;
    const first = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', { title: 'ttl one' }, { 'idempotency-key': key });
    expect(first.status).toBe(201);
    const keep = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', { title: 'ttl keep' }, { 'idempotency-key': `${key}-keep` });
    expect(keep.status).toBe(201);

    // Before expiry the key is taken: another body conflicts.
    const conflict = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', { title: 'ttl two' }, { 'idempotency-key': key });
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.code).toBe('idempotency_conflict');

    await db.query(`UPDATE idempotency_records SET expires_at = now() - interval '1 minute' WHERE idem_key = $1`, [key]);
    const purged = await t.app.get(IdempotencyPurger).purge();
    expect(purged).toBeGreaterThanOrEqual(1);
    const left: Array<{ idem_key: string }> = await db.query(`SELECT idem_key FROM idempotency_records WHERE idem_key LIKE $1 ORDER BY idem_key`, [
      `${key}%`,
    ]);
    expect(left.map((r) => r.idem_key)).toEqual([`${key}-keep`]);

    const again = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', { title: 'ttl two' }, { 'idempotency-key': key });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(again.body.id).not.toBe(first.body.id);
    expect(again.body.title).toBe('ttl two');
  });

  it('an expired but not yet purged record is treated as a new key too', async () => {
    const key = `expired-${Date.now()}`;
    const first = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', { title: 'exp one' }, { 'idempotency-key': key });
    expect(first.status).toBe(201);
    await db.query(`UPDATE idempotency_records SET expires_at = now() - interval '1 second' WHERE idem_key = $1`, [key]);

    const again = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', { title: 'exp one' }, { 'idempotency-key': key });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(again.body.id).not.toBe(first.body.id);
    await expect(sessionsTitled('exp one')).resolves.toBe(2);
  });

  it('a claim left in progress by a dead executor is taken over once its lock expires', async () => {
    const key = `stale-${Date.now()}`;
    const first = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', { title: 'stale' }, { 'idempotency-key': key });
    expect(first.status).toBe(201);
    // Simulate a crash between claim and commit: the record is in progress, its lock still held.
    await db.query(
      `UPDATE idempotency_records SET state = 'in_progress', response_status = NULL, response_body = NULL, locked_until = now() + interval '1 hour' WHERE idem_key = $1`,
      [key],
    );
    const blocked = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', { title: 'stale' }, { 'idempotency-key': key });
    expect(blocked.status).toBe(409);
    expect(blocked.body.error.code).toBe('idempotency_in_progress');

    await db.query(`UPDATE idempotency_records SET locked_until = now() - interval '1 second' WHERE idem_key = $1`, [key]);
    const taken = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', { title: 'stale' }, { 'idempotency-key': key });
    expect(taken.status).toBe(201);
    expect(taken.headers.get('idempotent-replayed')).toBeNull();
    const replay = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', { title: 'stale' }, { 'idempotency-key': key });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.text).toBe(taken.text);
  });
});
