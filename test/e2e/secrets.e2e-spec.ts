import { QueryBus } from '@nestjs/cqrs';
import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { ResolveSecretsQuery } from '../../src/modules/secrets/application/queries/resolve-secrets/resolve-secrets.query';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/** Distinctive values: any trace of them anywhere is a leak. */
const VALUE_A = 'sekrit-A-7f3e9c21d4b8a6e0-\u00e9t\u00e9';
const VALUE_A2 = 'sekrit-A2-0b1c2d3e4f5a6b7c';
const VALUE_B = 'sekrit-B-9a8b7c6d5e4f3a2b';
const ALL_VALUES = [VALUE_A, VALUE_A2, VALUE_B];
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('secrets (e2e): admin routes, encryption at rest, tenant isolation, nothing shows a value', () => {
  let t: TestApp;
  const responses: string[] = [];

  /** Every answer is kept, to check at the end that none holds a value. */
  async function call(key: string | null, method: string, path: string, body?: unknown, headers?: Record<string, string>) {
    const res = await t.call(key, method, path, body, headers);
    responses.push(`${res.status} ${[...res.headers.entries()].map(([k, v]) => `${k}: ${v}`).join('\n')}\n${res.text}`);
    return res;
  }
  const db = () => t.app.get(UnitOfWork).manager;
  const resolve = (tenantId: string, names: string[]): Promise<Map<string, string>> => t.app.get(QueryBus).execute(new ResolveSecretsQuery(tenantId, names));

  beforeAll(async () => {
    t = await startTestApp();
  }, 90_000);
  afterAll(async () => {
    await t?.close();
  });

  it('PUT creates version 1, a second PUT rotates to version 2; GET and list show names and versions only', async () => {
    const created = await call(KEYS.adminA, 'PUT', '/v1/secrets/CRM_TOKEN', { value: VALUE_A });
    expect(created.status).toBe(200);
    expect(Object.keys(created.body).sort()).toEqual(['created_at', 'name', 'object', 'updated_at', 'version']);
    expect(created.body).toMatchObject({ name: 'CRM_TOKEN', object: 'secret', version: 1 });
    expect(created.body.created_at).toMatch(ISO_MS);
    expect(created.body.updated_at).toMatch(ISO_MS);

    const rotated = await call(KEYS.adminA, 'PUT', '/v1/secrets/CRM_TOKEN', { value: VALUE_A2 });
    expect(rotated.status).toBe(200);
    expect(rotated.body).toMatchObject({ name: 'CRM_TOKEN', version: 2, created_at: created.body.created_at });
    expect(Date.parse(rotated.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.body.updated_at));
    await expect(resolve('tenant_a', ['CRM_TOKEN'])).resolves.toEqual(new Map([['CRM_TOKEN', VALUE_A2]]));

    const got = await call(KEYS.adminA, 'GET', '/v1/secrets/CRM_TOKEN');
    expect(got.status).toBe(200);
    expect(got.body).toEqual(rotated.body);

    expect((await call(KEYS.adminA, 'PUT', '/v1/secrets/A', { value: 'x' })).status).toBe(200);
    expect((await call(KEYS.adminA, 'PUT', '/v1/secrets/Z_LAST_1', { value: 'y' })).status).toBe(200);
    const list = await call(KEYS.adminA, 'GET', '/v1/secrets');
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ object: 'list', first_id: 'A', last_id: 'Z_LAST_1', has_more: false });
    expect(list.body.data.map((s: any) => [s.name, s.version])).toEqual([
      ['A', 1],
      ['CRM_TOKEN', 2],
      ['Z_LAST_1', 1],
    ]);
  });

  it('pages by name: limit, after, order; a malformed cursor is 400 invalid_cursor', async () => {
    const first = await call(KEYS.adminA, 'GET', '/v1/secrets?limit=2');
    expect(first.body.data.map((s: any) => s.name)).toEqual(['A', 'CRM_TOKEN']);
    expect(first.body).toMatchObject({ has_more: true, last_id: 'CRM_TOKEN' });
    const second = await call(KEYS.adminA, 'GET', `/v1/secrets?limit=2&after=${first.body.last_id}`);
    expect(second.body.data.map((s: any) => s.name)).toEqual(['Z_LAST_1']);
    expect(second.body.has_more).toBe(false);
    const desc = await call(KEYS.adminA, 'GET', '/v1/secrets?order=desc&after=Z_LAST_1');
    expect(desc.body.data.map((s: any) => s.name)).toEqual(['CRM_TOKEN', 'A']);
    const bad = await call(KEYS.adminA, 'GET', '/v1/secrets?after=not-a-name');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_cursor');
    expect((await call(KEYS.adminA, 'GET', '/v1/secrets?limit=0')).status).toBe(400);
  });

  it('DELETE answers 204, then the name is 404 secret_not_found everywhere; set again it goes on counting versions', async () => {
    const del = await call(KEYS.adminA, 'DELETE', '/v1/secrets/A');
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    for (const [method, path] of [
      ['GET', '/v1/secrets/A'],
      ['DELETE', '/v1/secrets/A'],
      ['GET', '/v1/secrets/NEVER_SET'],
      ['DELETE', '/v1/secrets/NEVER_SET'],
    ]) {
      const res = await call(KEYS.adminA, method, path);
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: 'secret_not_found', type: 'not_found', retryable: false });
      expect(res.headers.get('x-request-id')).toBe(res.body.error.request_id);
    }
    expect((await call(KEYS.adminA, 'GET', '/v1/secrets')).body.data.map((s: any) => s.name)).toEqual(['CRM_TOKEN', 'Z_LAST_1']);
    await expect(resolve('tenant_a', ['A', 'CRM_TOKEN'])).resolves.toEqual(new Map([['CRM_TOKEN', VALUE_A2]]));
    const again = await call(KEYS.adminA, 'PUT', '/v1/secrets/A', { value: 'x2' });
    expect(again.body).toMatchObject({ name: 'A', version: 2 });
    // The deleted value is gone from the database, not only hidden.
    const rows = await db().query(`SELECT name, version, ciphertext, deleted_at FROM tenant_secrets WHERE tenant_id = 'tenant_a' AND name = 'Z_LAST_1'`);
    expect(rows).toHaveLength(1);
    expect((await call(KEYS.adminA, 'DELETE', '/v1/secrets/Z_LAST_1')).status).toBe(204);
    const [gone] = await db().query(`SELECT ciphertext, deleted_at FROM tenant_secrets WHERE tenant_id = 'tenant_a' AND name = 'Z_LAST_1'`);
    expect(gone.ciphertext).toBeNull();
    expect(gone.deleted_at).not.toBeNull();
  });

  it('members get 403 on every route, unauthenticated callers 401', async () => {
    for (const [method, path, body] of [
      ['GET', '/v1/secrets', undefined],
      ['GET', '/v1/secrets/CRM_TOKEN', undefined],
      ['PUT', '/v1/secrets/CRM_TOKEN', { value: 'member-try' }],
      ['DELETE', '/v1/secrets/CRM_TOKEN', undefined],
    ] as const) {
      const res = await call(KEYS.memberA1, method, path, body);
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'forbidden', type: 'permission' });
      expect((await call(null, method, path, body)).status).toBe(401);
    }
    await expect(resolve('tenant_a', ['CRM_TOKEN'])).resolves.toEqual(new Map([['CRM_TOKEN', VALUE_A2]]));
  });

  it('400 invalid_request naming the field: a bad name, an empty, null, non-string or too long value, extra fields, no body', async () => {
    const cases: Array<[string, unknown, string]> = [
      ['/v1/secrets/lower_case', { value: 'v' }, 'name'],
      ['/v1/secrets/1STARTS_WITH_DIGIT', { value: 'v' }, 'name'],
      ['/v1/secrets/HAS-DASH', { value: 'v' }, 'name'],
      [`/v1/secrets/A${'B'.repeat(64)}`, { value: 'v' }, 'name'],
      ['/v1/secrets/OK_NAME', { value: '' }, 'value'],
      ['/v1/secrets/OK_NAME', { value: null }, 'value'],
      ['/v1/secrets/OK_NAME', { value: 42 }, 'value'],
      ['/v1/secrets/OK_NAME', {}, 'value'],
      ['/v1/secrets/OK_NAME', { value: 'x'.repeat(8193) }, 'value'],
      // 2731 x 3 bytes = 8193 bytes in 2731 characters: the limit is bytes of UTF-8.
      ['/v1/secrets/OK_NAME', { value: '\u20ac'.repeat(2731) }, 'value'],
      ['/v1/secrets/OK_NAME', { value: 'v', version: 3 }, 'version'],
      ['/v1/secrets/OK_NAME', { value: 'v', name: 'OTHER' }, 'name'],
    ];
    for (const [path, body, field] of cases) {
      const res = await call(KEYS.adminA, 'PUT', path, body);
      expect([path, res.status]).toEqual([path, 400]);
      expect(res.body.error.code).toBe('invalid_request');
      expect(res.body.error.details.errors.map((e: any) => e.field)).toContain(field);
    }
    for (const method of ['GET', 'DELETE']) {
      const res = await call(KEYS.adminA, method, '/v1/secrets/lower_case');
      expect(res.status).toBe(400);
      expect(res.body.error.details.errors[0].field).toBe('name');
    }
    const exact = await call(KEYS.adminA, 'PUT', `/v1/secrets/A${'B'.repeat(63)}`, { value: '\u20ac'.repeat(2730) + 'xy' });
    expect(exact.status).toBe(200);
    expect((await call(KEYS.adminA, 'GET', '/v1/secrets/OK_NAME')).status).toBe(404);
  });

  it('another tenant: the same name is another secret; it never sees or changes tenant A\'s', async () => {
    expect((await call(KEYS.adminB, 'GET', '/v1/secrets/CRM_TOKEN')).status).toBe(404);
    expect((await call(KEYS.adminB, 'DELETE', '/v1/secrets/CRM_TOKEN')).status).toBe(404);
    expect((await call(KEYS.adminB, 'GET', '/v1/secrets')).body.data).toEqual([]);
    const b = await call(KEYS.adminB, 'PUT', '/v1/secrets/CRM_TOKEN', { value: VALUE_B });
    expect(b.body).toMatchObject({ name: 'CRM_TOKEN', version: 1 });
    expect((await call(KEYS.adminA, 'GET', '/v1/secrets/CRM_TOKEN')).body.version).toBe(2);
    await expect(resolve('tenant_a', ['CRM_TOKEN', 'MISSING', 'not a name'])).resolves.toEqual(new Map([['CRM_TOKEN', VALUE_A2]]));
    await expect(resolve('tenant_b', ['CRM_TOKEN', 'CRM_TOKEN'])).resolves.toEqual(new Map([['CRM_TOKEN', VALUE_B]]));
    await expect(resolve('tenant_c', ['CRM_TOKEN'])).resolves.toEqual(new Map());
    await expect(resolve('tenant_a', [])).resolves.toEqual(new Map());
    // Tenant A's row copied under tenant B's name does not open there: the tenant is authenticated with the ciphertext.
    const m = db();
    await m.query(
      `UPDATE tenant_secrets b SET ciphertext = a.ciphertext, version = a.version FROM tenant_secrets a
        WHERE a.tenant_id = 'tenant_a' AND a.name = 'CRM_TOKEN' AND b.tenant_id = 'tenant_b' AND b.name = 'CRM_TOKEN'`,
    );
    await expect(resolve('tenant_b', ['CRM_TOKEN'])).rejects.toThrow();
    expect((await call(KEYS.adminB, 'PUT', '/v1/secrets/CRM_TOKEN', { value: VALUE_B })).body.version).toBe(3);
    await expect(resolve('tenant_b', ['CRM_TOKEN'])).resolves.toEqual(new Map([['CRM_TOKEN', VALUE_B]]));
  });

  it('Idempotency-Key on PUT and DELETE: replayed byte-for-byte, another body 409, and the record holds no value', async () => {
    const h = { 'idempotency-key': 'secret-put-1' };
    const first = await call(KEYS.adminA, 'PUT', '/v1/secrets/IDEM_TOKEN', { value: VALUE_A }, h);
    expect(first.body.version).toBe(1);
    const replay = await call(KEYS.adminA, 'PUT', '/v1/secrets/IDEM_TOKEN', { value: VALUE_A }, h);
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.text).toBe(first.text);
    expect((await call(KEYS.adminA, 'GET', '/v1/secrets/IDEM_TOKEN')).body.version).toBe(1);
    const other = await call(KEYS.adminA, 'PUT', '/v1/secrets/IDEM_TOKEN', { value: VALUE_A2 }, h);
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('idempotency_conflict');

    const d = { 'idempotency-key': 'secret-del-1' };
    expect((await call(KEYS.adminA, 'DELETE', '/v1/secrets/IDEM_TOKEN', undefined, d)).status).toBe(204);
    const delReplay = await call(KEYS.adminA, 'DELETE', '/v1/secrets/IDEM_TOKEN', undefined, d);
    expect(delReplay.status).toBe(204);
    expect(delReplay.headers.get('idempotent-replayed')).toBe('true');
    const missing = { 'idempotency-key': 'secret-del-2' };
    expect((await call(KEYS.adminA, 'DELETE', '/v1/secrets/IDEM_TOKEN', undefined, missing)).status).toBe(404);
    const missingReplay = await call(KEYS.adminA, 'DELETE', '/v1/secrets/IDEM_TOKEN', undefined, missing);
    expect(missingReplay.status).toBe(404);
    expect(missingReplay.headers.get('idempotent-replayed')).toBe('true');

    const records = await db().query(`SELECT * FROM idempotency_records WHERE scope LIKE '%/v1/secrets/%'`);
    expect(records.length).toBeGreaterThanOrEqual(3);
    const sha = (await import('node:crypto')).createHash('sha256').update(JSON.stringify({ value: VALUE_A })).digest('hex');
    expect(JSON.stringify(records)).not.toContain(sha);
  });

  it('concurrent PUTs of one name: each gets its own version, none fails, the last version holds a value that was sent', async () => {
    const sent = Array.from({ length: 12 }, (_, i) => `race-value-${i}`);
    const answers = await Promise.all(sent.map((value) => call(KEYS.adminA, 'PUT', '/v1/secrets/RACE_TOKEN', { value })));
    expect(answers.map((a) => a.status)).toEqual(sent.map(() => 200));
    expect(answers.map((a) => a.body.version).sort((x: number, y: number) => x - y)).toEqual(sent.map((_, i) => i + 1));
    const last = answers.find((a) => a.body.version === sent.length)!;
    const winner = sent[answers.indexOf(last)];
    await expect(resolve('tenant_a', ['RACE_TOKEN'])).resolves.toEqual(new Map([['RACE_TOKEN', winner]]));
    expect((await call(KEYS.adminA, 'DELETE', '/v1/secrets/RACE_TOKEN')).status).toBe(204);
  });

  it('the ciphertext column holds no plaintext; a fresh IV per write', async () => {
    const rows: Array<{ tenant_id: string; name: string; ciphertext: Buffer | null }> = await db().query(`SELECT tenant_id, name, ciphertext FROM tenant_secrets`);
    const live = rows.filter((r) => r.ciphertext !== null);
    expect(live.length).toBeGreaterThanOrEqual(3);
    for (const r of live) {
      expect(Buffer.isBuffer(r.ciphertext)).toBe(true);
      for (const v of ALL_VALUES) expect(r.ciphertext!.includes(Buffer.from(v, 'utf8'))).toBe(false);
      expect(r.ciphertext![0]).toBe(1);
    }
    const ivs = new Set(live.map((r) => r.ciphertext!.subarray(1, 13).toString('hex')));
    expect(ivs.size).toBe(live.length);
  });

  it('the audit trail records puts and deletes by name and version, never a value; no route answer, header or row anywhere holds one', async () => {
    let records: any[] = [];
    const until = Date.now() + 5000;
    for (;;) {
      const a = await call(KEYS.adminA, 'GET', '/v1/admin/audit?limit=100');
      records = a.body.data.filter((r: any) => r.resource_type === 'secret');
      if (records.some((r: any) => r.action === 'DELETE /v1/secrets/:name') || Date.now() > until) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const rotate = records.find((r) => r.action === 'PUT /v1/secrets/:name' && r.resource_id === 'CRM_TOKEN' && r.data.result?.version === 2);
    expect(rotate).toBeDefined();
    expect(rotate.data.request.body).toBeNull();
    expect(rotate.data.request.body_withheld).toBe(true);
    expect(rotate.data.result).toEqual({ name: 'CRM_TOKEN', version: 2 });
    const deleted = records.find((r) => r.action === 'DELETE /v1/secrets/:name' && r.resource_id === 'A' && r.status === 204);
    expect(deleted.data.result).toEqual({ name: 'A', version: 1 });
    // Requests refused before any handler ran (validation) are recorded without their body too.
    const refused = records.filter((r) => r.action === 'PUT /v1/secrets/:name' && r.status === 400);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) expect(r.data.request.body).toBeNull();

    for (const text of responses) for (const v of ALL_VALUES) expect(text).not.toContain(v);
    // Every table, every row, as text (bytea as hex): no value, in UTF-8 or in hex.
    const m = db();
    const tables: Array<{ table_name: string }> = await m.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`);
    expect(tables.map((x) => x.table_name)).toEqual(expect.arrayContaining(['tenant_secrets', 'audit_records', 'idempotency_records']));
    for (const { table_name } of tables) {
      for (const v of ALL_VALUES) {
        const hex = Buffer.from(v, 'utf8').toString('hex');
        const [hit] = await m.query(`SELECT count(*)::int AS n FROM "${table_name}" x WHERE x::text LIKE $1 OR x::text LIKE $2`, [`%${v}%`, `%${hex}%`]);
        expect([table_name, hit.n]).toEqual([table_name, 0]);
      }
    }
  });
});
