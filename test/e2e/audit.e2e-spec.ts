import { DataSource } from 'typeorm';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

type AuditRecord = {
  id: string;
  object: string;
  tenant_id: string;
  seq: number;
  actor_subject_id: string;
  actor_role: string;
  actor_key_id: string | null;
  action: string;
  resource_type: string | null;
  resource_id: string | null;
  session_id: string | null;
  request_id: string | null;
  outcome: string;
  status: number | null;
  data: any;
  prev_hash: string;
  hash: string;
};

describe('audit trail over HTTP', () => {
  let t: TestApp;
  let sessionId: string;
  let conflictRequestId: string;

  async function audit(key: string, query = ''): Promise<{ status: number; body: any }> {
    const res = await t.call(key, 'GET', `/v1/admin/audit${query}`);
    return { status: res.status, body: res.body };
  }

  async function all(key: string, query = ''): Promise<AuditRecord[]> {
    const out: AuditRecord[] = [];
    let after = '';
    for (let i = 0; i < 100; i++) {
      const res = await audit(key, `?order=asc&limit=100${query}${after ? `&after=${after}` : ''}`);
      expect(res.status).toBe(200);
      out.push(...res.body.data);
      if (!res.body.has_more) return out;
      after = res.body.last_id;
    }
    throw new Error('too many pages');
  }

  beforeAll(async () => {
    t = await startTestApp();
    // Tenant A: a member creates, updates, conflicts, archives; an admin creates and deletes.
    const created = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', { title: 'first', metadata: { ticket: 'T-1' } });
    expect(created.status).toBe(201);
    sessionId = created.body.id;
    const updated = await t.call(KEYS.memberA1, 'POST', `/v1/sessions/${sessionId}`, { title: 'second', expected_revision: 1 });
    expect(updated.status).toBe(200);
    const conflict = await t.call(KEYS.memberA1, 'POST', `/v1/sessions/${sessionId}`, { title: 'stale', expected_revision: 1 }, { 'x-request-id': 'audit-e2e-conflict-1' });
    expect(conflict.status).toBe(409);
    conflictRequestId = conflict.headers.get('x-request-id')!;
    expect(conflictRequestId).toBe('audit-e2e-conflict-1');
    const archived = await t.call(KEYS.memberA1, 'POST', `/v1/sessions/${sessionId}/archive`, {});
    expect(archived.status).toBe(200);
    const other = await t.call(KEYS.adminA, 'POST', '/v1/sessions', { title: 'admin owned' });
    expect(other.status).toBe(201);
    const deleted = await t.call(KEYS.adminA, 'DELETE', `/v1/sessions/${other.body.id}`);
    expect(deleted.status).toBe(204);
    // Not recorded: reads, and a write that fails authentication (no tenant).
    expect((await t.call(KEYS.memberA1, 'GET', `/v1/sessions/${sessionId}`)).status).toBe(200);
    expect((await t.call(null, 'POST', '/v1/sessions', { title: 'anonymous' })).status).toBe(401);
    // Tenant B writes too.
    expect((await t.call(KEYS.memberB, 'POST', '/v1/sessions', { title: 'tenant b' })).status).toBe(201);
  });
  afterAll(async () => {
    await t.close();
  });

  it('records every state-changing request of the tenant, failed ones included, with actor and outcome', async () => {
    const records = await all(KEYS.adminA);
    expect(records.map((r) => [r.seq, r.action, r.status, r.outcome, r.actor_subject_id])).toEqual([
      [1, 'POST /v1/sessions', 201, 'ok', 'user_a1'],
      [2, 'POST /v1/sessions/:id', 200, 'ok', 'user_a1'],
      [3, 'POST /v1/sessions/:id', 409, 'session_conflict', 'user_a1'],
      [4, 'POST /v1/sessions/:id/archive', 200, 'ok', 'user_a1'],
      [5, 'POST /v1/sessions', 201, 'ok', 'admin_a'],
      [6, 'DELETE /v1/sessions/:id', 204, 'ok', 'admin_a'],
    ]);
    for (const r of records) {
      expect(r).toMatchObject({ object: 'audit_record', tenant_id: 'tenant_a', resource_type: 'session' });
      expect(r.actor_key_id).toMatch(/^key_/);
      expect(r.id).toMatch(/^aud_/);
      expect(r.hash).toMatch(/^[0-9a-f]{64}$/);
    }
    expect(records[0]).toMatchObject({ actor_role: 'member', resource_id: sessionId, session_id: sessionId });
    expect(records[0].data.request.body).toEqual({ title: 'first', metadata: { ticket: 'T-1' } });
    expect(records[2]).toMatchObject({ request_id: conflictRequestId, resource_id: sessionId, session_id: sessionId });
    expect(records[2].data).toEqual({
      request: {
        method: 'POST',
        url: `/v1/sessions/${sessionId}`,
        params: { id: sessionId },
        query: {},
        body: { title: 'stale', expected_revision: 1 },
        idempotency_key: null,
      },
      response: { status: 409, error_code: 'session_conflict', idempotent_replayed: false },
    });
    expect(records[4].actor_role).toBe('admin');
    expect(records[5].resource_id).toBe(records[4].resource_id);
    // The chain links.
    for (let i = 1; i < records.length; i++) expect(records[i].prev_hash).toBe(records[i - 1].hash);
    expect(records[0].prev_hash).toBe('0'.repeat(64));
  });

  it('filters by session, action, actor, resource and time', async () => {
    const bySession = await all(KEYS.adminA, `&session_id=${sessionId}`);
    expect(bySession.map((r) => r.seq)).toEqual([1, 2, 3, 4]);
    const archive = await all(KEYS.adminA, `&action=${encodeURIComponent('POST /v1/sessions/:id/archive')}`);
    expect(archive.map((r) => r.seq)).toEqual([4]);
    const byAdmin = await all(KEYS.adminA, '&actor=admin_a');
    expect(byAdmin.map((r) => r.seq)).toEqual([5, 6]);
    const byResource = await all(KEYS.adminA, `&resource_id=${sessionId}&action=${encodeURIComponent('POST /v1/sessions/:id')}`);
    expect(byResource.map((r) => r.outcome)).toEqual(['ok', 'session_conflict']);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    await expect(all(KEYS.adminA, `&from=${future}`)).resolves.toEqual([]);
    const window = await all(KEYS.adminA, `&from=2000-01-01T00:00:00.000Z&to=${future}`);
    expect(window).toHaveLength(6);
    const bad = await audit(KEYS.adminA, '?from=yesterday');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_request');
  });

  it('pages with after/limit/order (default newest first)', async () => {
    const first = await audit(KEYS.adminA, '?limit=4');
    expect(first.status).toBe(200);
    expect(first.body.object).toBe('list');
    expect(first.body.data.map((r: AuditRecord) => r.seq)).toEqual([6, 5, 4, 3]);
    expect(first.body.has_more).toBe(true);
    expect(first.body.first_id).toBe(first.body.data[0].id);
    const second = await audit(KEYS.adminA, `?limit=4&after=${first.body.last_id}`);
    expect(second.body.data.map((r: AuditRecord) => r.seq)).toEqual([2, 1]);
    expect(second.body.has_more).toBe(false);
    const asc = await audit(KEYS.adminA, `?order=asc&limit=2&after=${first.body.data[3].id}`);
    expect(asc.body.data.map((r: AuditRecord) => r.seq)).toEqual([4, 5]);
    expect(asc.body.has_more).toBe(true);
    const malformed = await audit(KEYS.adminA, '?after=nope');
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('invalid_cursor');
  });

  it("never shows another tenant's records", async () => {
    const b = await all(KEYS.adminB);
    expect(b).toHaveLength(1);
    expect(b[0]).toMatchObject({ tenant_id: 'tenant_b', seq: 1, actor_subject_id: 'user_b', prev_hash: '0'.repeat(64) });
    await expect(all(KEYS.adminB, `&session_id=${sessionId}`)).resolves.toEqual([]);
    const aIds = (await all(KEYS.adminA)).map((r) => r.id);
    const foreign = await audit(KEYS.adminB, `?after=${aIds[0]}`);
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.code).toBe('invalid_cursor');
  });

  it('answers 403 forbidden to members on both admin routes', async () => {
    for (const path of ['/v1/admin/audit', '/v1/admin/audit/verify']) {
      const res = await t.call(KEYS.memberA1, 'GET', path);
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('forbidden');
    }
    expect((await t.call(null, 'GET', '/v1/admin/audit')).status).toBe(401);
  });

  it('verify is ok for an intact chain and names a record tampered with in the database', async () => {
    const ok = await t.call(KEYS.adminA, 'GET', '/v1/admin/audit/verify');
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ ok: true, checked: 6 });
    const records = await all(KEYS.adminA);
    const victim = records[2];
    const db = t.app.get(DataSource);
    await db.transaction(async (m) => {
      await m.query(`ALTER TABLE audit_records DISABLE TRIGGER audit_records_append_only`);
      await m.query(`UPDATE audit_records SET outcome = 'ok', status = 200 WHERE id = $1`, [victim.id]);
      await m.query(`ALTER TABLE audit_records ENABLE TRIGGER audit_records_append_only`);
    });
    const broken = await t.call(KEYS.adminA, 'GET', '/v1/admin/audit/verify');
    expect(broken.status).toBe(200);
    expect(broken.body).toEqual({ ok: false, checked: 2, first_broken: { id: victim.id, seq: 3, reason: 'hash_mismatch' } });
    // Tenant B's chain is unaffected.
    const b = await t.call(KEYS.adminB, 'GET', '/v1/admin/audit/verify');
    expect(b.body).toEqual({ ok: true, checked: 1 });
  });

  it('documents both routes in the OpenAPI document', async () => {
    const doc = await t.call(null, 'GET', '/docs-json');
    expect(doc.status).toBe(200);
    expect(Object.keys(doc.body.paths)).toEqual(expect.arrayContaining(['/v1/admin/audit', '/v1/admin/audit/verify']));
    expect(doc.body.paths['/v1/admin/audit'].get.responses['403']).toBeDefined();
    const verify200 = doc.body.paths['/v1/admin/audit/verify'].get.responses['200'].content['application/json'];
    expect(verify200.schema.$ref).toMatch(/AuditVerifyResponseDto$/);
    expect(verify200.examples.tampered.value.first_broken.reason).toBe('mac_mismatch');
    expect(doc.body.components.schemas.AuditRecordResponseDto.properties.hash.description).toMatch(/SHA-256/);
  });
});
