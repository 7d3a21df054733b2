import { createHash, createHmac } from 'node:crypto';
import { AuditChainKey, AuditRecord, AuditRecordBody, canonicalAuditRecord, GENESIS_HASH, jsonSafe, legacyAuditHash, verifyBatch } from './audit-record';

const KEY = Buffer.from('k'.repeat(32));
const key = new AuditChainKey(KEY);
const auditHash = (prev: string, b: AuditRecordBody) => key.recordHash(prev, b);

const body = (over: Partial<AuditRecordBody> = {}): AuditRecordBody => ({
  id: 'aud_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B',
  tenantId: 'tenant_a',
  seq: 1,
  occurredAt: new Date('2025-01-02T03:04:05.678Z'),
  actorSubjectId: 'user_a1',
  actorRole: 'member',
  actorKeyId: 'key_1',
  action: 'POST /v1/sessions',
  resourceType: 'session',
  resourceId: 'sess_1',
  sessionId: 'sess_1',
  runId: null,
  requestId: 'req_1',
  outcome: 'ok',
  status: 201,
  data: { z: 1, a: { y: [1, 'two', null], b: true } },
  ...over,
});

function chain(bodies: AuditRecordBody[], legacyUntil = 0): AuditRecord[] {
  let prev = GENESIS_HASH;
  return bodies.map((b) => {
    const hash = b.seq <= legacyUntil ? legacyAuditHash(prev, b) : auditHash(prev, b);
    const r = { ...b, prevHash: prev, hash };
    prev = hash;
    return r;
  });
}

describe('audit record hashing', () => {
  it('has the documented canonical form: sorted keys at every depth, ISO time, nulls kept', () => {
    expect(canonicalAuditRecord(body())).toBe(
      '{"action":"POST /v1/sessions","actor_key_id":"key_1","actor_role":"member","actor_subject_id":"user_a1",' +
        '"data":{"a":{"b":true,"y":[1,"two",null]},"z":1},"id":"aud_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B","occurred_at":"2025-01-02T03:04:05.678Z",' +
        '"outcome":"ok","request_id":"req_1","resource_id":"sess_1","resource_type":"session","run_id":null,"seq":1,' +
        '"session_id":"sess_1","status":201,"tenant_id":"tenant_a"}',
    );
  });

  it('is HMAC-SHA256 hex, keyed with AUDIT_HMAC_KEY, of prev_hash followed by the canonical record', () => {
    const expected = createHmac('sha256', KEY).update(GENESIS_HASH + canonicalAuditRecord(body())).digest('hex');
    expect(auditHash(GENESIS_HASH, body())).toBe(expected);
    expect(expected).toMatch(/^[0-9a-f]{64}$/);
    // Another key, another hash; the old unkeyed scheme (anyone can recompute it) is neither.
    expect(new AuditChainKey(Buffer.from('j'.repeat(32))).recordHash(GENESIS_HASH, body())).not.toBe(expected);
    expect(legacyAuditHash(GENESIS_HASH, body())).toBe(createHash('sha256').update(GENESIS_HASH + canonicalAuditRecord(body())).digest('hex'));
    expect(legacyAuditHash(GENESIS_HASH, body())).not.toBe(expected);
  });

  it('tags a chain head over tenant, position, last hash and legacy boundary', () => {
    const head = { tenantId: 'tenant_a', lastSeq: 7, lastHash: 'a'.repeat(64), legacyUntil: 3 };
    const tag = key.headTag(head);
    expect(tag).toBe(createHmac('sha256', KEY).update('audit_chain_head:' + JSON.stringify({ last_hash: 'a'.repeat(64), last_seq: 7, legacy_until: 3, tenant_id: 'tenant_a' })).digest('hex'));
    expect(key.headIsAuthentic({ ...head, tag })).toBe(true);
    for (const moved of [{ lastSeq: 6 }, { lastHash: 'b'.repeat(64) }, { legacyUntil: 7 }, { tenantId: 'tenant_b' }]) {
      expect(key.headIsAuthentic({ ...head, ...moved, tag })).toBe(false);
    }
    expect(key.headIsAuthentic({ ...head, tag: tag.slice(1) })).toBe(false);
    expect(new AuditChainKey(Buffer.from('j'.repeat(32))).headIsAuthentic({ ...head, tag })).toBe(false);
  });

  it('does not depend on key order of data, but on every field and on prev_hash', () => {
    const h = auditHash(GENESIS_HASH, body());
    expect(auditHash(GENESIS_HASH, body({ data: { a: { b: true, y: [1, 'two', null] }, z: 1 } }))).toBe(h);
    expect(auditHash(GENESIS_HASH, body({ data: { z: 2, a: { y: [1, 'two', null], b: true } } }))).not.toBe(h);
    expect(auditHash(GENESIS_HASH, body({ outcome: 'session_conflict' }))).not.toBe(h);
    expect(auditHash(GENESIS_HASH, body({ seq: 2 }))).not.toBe(h);
    expect(auditHash('f'.repeat(64), body())).not.toBe(h);
  });

  it('makes data jsonb-safe: NUL and lone surrogates become U+FFFD, undefined is dropped', () => {
    expect(jsonSafe({ a: 'x\u0000y', b: '\ud800', c: '😀', d: undefined, ['k\u0000']: 1 })).toEqual({ a: 'x\uFFFDy', b: '\uFFFD', c: '😀', ['k\uFFFD']: 1 });
    const proto = jsonSafe(JSON.parse('{"__proto__":{"x":1}}')) as Record<string, unknown>;
    expect(Object.keys(proto)).toEqual(['__proto__']);
    expect(jsonSafe(undefined)).toBeNull();
  });
});

describe('verifyBatch', () => {
  const records = chain([body(), body({ id: 'aud_2', seq: 2 }), body({ id: 'aud_3', seq: 3 })]);

  it('accepts an intact chain and returns the last link', () => {
    expect(verifyBatch(key, 0, { seq: 0, hash: GENESIS_HASH }, records)).toEqual({ ok: true, last: { seq: 3, hash: records[2].hash } });
    expect(verifyBatch(key, 0, { seq: 1, hash: records[0].hash }, records.slice(1))).toEqual({ ok: true, last: { seq: 3, hash: records[2].hash } });
  });

  it('names a record whose data was changed', () => {
    const tampered = records.map((r) => (r.seq === 2 ? { ...r, data: { z: 1 } } : r));
    expect(verifyBatch(key, 0, { seq: 0, hash: GENESIS_HASH }, tampered)).toEqual({ ok: false, checked: 1, broken: { id: 'aud_2', seq: 2, reason: 'hash_mismatch' } });
  });

  it('names a record rehashed without the key (unkeyed SHA-256, as the adversary of issue 14 did)', () => {
    const b2 = body({ id: 'aud_2', seq: 2, data: { forged: true } });
    const h2 = legacyAuditHash(records[0].hash, b2);
    const b3 = body({ id: 'aud_3', seq: 3 });
    const forged = [records[0], { ...b2, prevHash: records[0].hash, hash: h2 }, { ...b3, prevHash: h2, hash: legacyAuditHash(h2, b3) }];
    expect(verifyBatch(key, 0, { seq: 0, hash: GENESIS_HASH }, forged)).toMatchObject({ ok: false, checked: 1, broken: { id: 'aud_2', seq: 2, reason: 'hash_mismatch' } });
  });

  it('verifies records up to the legacy boundary with the old unkeyed hash, and keyed ones after it', () => {
    const upgraded = chain([body(), body({ id: 'aud_2', seq: 2 }), body({ id: 'aud_3', seq: 3 })], 2);
    expect(verifyBatch(key, 2, { seq: 0, hash: GENESIS_HASH }, upgraded)).toEqual({ ok: true, last: { seq: 3, hash: upgraded[2].hash } });
    // A keyed record can't be passed off as a legacy one, nor the reverse.
    expect(verifyBatch(key, 3, { seq: 0, hash: GENESIS_HASH }, upgraded)).toMatchObject({ ok: false, broken: { seq: 3, reason: 'hash_mismatch' } });
    expect(verifyBatch(key, 1, { seq: 0, hash: GENESIS_HASH }, upgraded)).toMatchObject({ ok: false, broken: { seq: 2, reason: 'hash_mismatch' } });
  });

  it('names a record whose prev_hash does not link, and a gap in seq', () => {
    const relinked = records.map((r) => (r.seq === 3 ? { ...r, prevHash: GENESIS_HASH } : r));
    expect(verifyBatch(key, 0, { seq: 0, hash: GENESIS_HASH }, relinked)).toEqual({ ok: false, checked: 2, broken: { id: 'aud_3', seq: 3, reason: 'prev_hash_mismatch' } });
    expect(verifyBatch(key, 0, { seq: 0, hash: GENESIS_HASH }, [records[0], records[2]])).toEqual({ ok: false, checked: 1, broken: { id: 'aud_3', seq: 3, reason: 'seq_gap' } });
  });
});
