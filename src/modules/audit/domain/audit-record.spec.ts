import { createHash, createHmac } from 'node:crypto';
import { AuditChainKey, AuditRecord, AuditRecordBody, auditRecordHash, canonicalAuditRecord, ChainEras, GENESIS_HASH, jsonSafe, legacyAuditHash, verifyBatch, verifyInSlices } from './audit-record';

const KEY = Buffer.from('k'.repeat(32));
const key = new AuditChainKey(KEY);
const auditHash = (prev: string, b: AuditRecordBody) => auditRecordHash(prev, b);
const eras = (legacyUntil: number, keyedUntil = legacyUntil): ChainEras => ({ legacyUntil, keyedUntil });

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

/** Records 1..legacyUntil unkeyed, up to keyedUntil keyed-hash, later SHA-256 with a mac. */
function chain(bodies: AuditRecordBody[], legacyUntil = 0, keyedUntil = legacyUntil): AuditRecord[] {
  let prev = GENESIS_HASH;
  return bodies.map((b) => {
    const keyedEra = b.seq > legacyUntil && b.seq <= keyedUntil;
    const hash = keyedEra ? key.keyedEraHash(prev, b) : auditHash(prev, b);
    const r = { ...b, prevHash: prev, hash, mac: keyedEra || b.seq <= legacyUntil ? null : key.recordMac(hash) };
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

  it('hashes with plain SHA-256 of prev_hash + canonical record (anyone recomputes it) and macs the hash with HMAC-SHA256 under AUDIT_HMAC_KEY', () => {
    const expected = createHash('sha256').update(GENESIS_HASH + canonicalAuditRecord(body())).digest('hex');
    expect(auditHash(GENESIS_HASH, body())).toBe(expected);
    expect(expected).toMatch(/^[0-9a-f]{64}$/);
    expect(legacyAuditHash(GENESIS_HASH, body())).toBe(expected);
    expect(key.recordMac(expected)).toBe(createHmac('sha256', KEY).update(expected).digest('hex'));
    expect(new AuditChainKey(Buffer.from('j'.repeat(32))).recordMac(expected)).not.toBe(key.recordMac(expected));
    // The keyed era (before macs): HMAC of the same bytes.
    expect(key.keyedEraHash(GENESIS_HASH, body())).toBe(createHmac('sha256', KEY).update(GENESIS_HASH + canonicalAuditRecord(body())).digest('hex'));
  });

  it('tags a chain head over tenant, position, last hash and legacy boundary', () => {
    const head = { tenantId: 'tenant_a', lastSeq: 7, lastHash: 'a'.repeat(64), legacyUntil: 3, keyedUntil: 5 };
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
    expect(verifyBatch(key, eras(0), { seq: 0, hash: GENESIS_HASH }, records)).toEqual({ ok: true, last: { seq: 3, hash: records[2].hash } });
    expect(verifyBatch(key, eras(0), { seq: 1, hash: records[0].hash }, records.slice(1))).toEqual({ ok: true, last: { seq: 3, hash: records[2].hash } });
  });

  it('names a record whose data was changed', () => {
    const tampered = records.map((r) => (r.seq === 2 ? { ...r, data: { z: 1 } } : r));
    expect(verifyBatch(key, eras(0), { seq: 0, hash: GENESIS_HASH }, tampered)).toEqual({ ok: false, checked: 1, broken: { id: 'aud_2', seq: 2, reason: 'hash_mismatch' } });
  });

  it('names a record rewritten and rehashed without the key (SHA-256 recomputed, the mac kept or dropped): mac_mismatch', () => {
    const b2 = body({ id: 'aud_2', seq: 2, data: { forged: true } });
    const h2 = auditHash(records[0].hash, b2);
    const b3 = body({ id: 'aud_3', seq: 3 });
    const h3 = auditHash(h2, b3);
    for (const mac2 of [records[1].mac, null]) {
      const forged = [records[0], { ...b2, prevHash: records[0].hash, hash: h2, mac: mac2 }, { ...b3, prevHash: h2, hash: h3, mac: records[2].mac }];
      expect(verifyBatch(key, eras(0), { seq: 0, hash: GENESIS_HASH }, forged)).toEqual({ ok: false, checked: 1, broken: { id: 'aud_2', seq: 2, reason: 'mac_mismatch' } });
    }
  });

  it('checks each era as it was written: unkeyed up to legacy_until, keyed hash up to keyed_until, hash + mac after', () => {
    const bodies = [1, 2, 3, 4].map((n) => body({ id: `aud_${n}`, seq: n }));
    const upgraded = chain(bodies, 1, 3);
    expect(upgraded.map((r) => r.mac === null)).toEqual([true, true, true, false]);
    expect(verifyBatch(key, eras(1, 3), { seq: 0, hash: GENESIS_HASH }, upgraded)).toEqual({ ok: true, last: { seq: 4, hash: upgraded[3].hash } });
    // A record can't be passed off as one of another era.
    expect(verifyBatch(key, eras(1, 4), { seq: 0, hash: GENESIS_HASH }, upgraded)).toMatchObject({ ok: false, broken: { seq: 4, reason: 'hash_mismatch' } });
    expect(verifyBatch(key, eras(1, 2), { seq: 0, hash: GENESIS_HASH }, upgraded)).toMatchObject({ ok: false, broken: { seq: 3, reason: 'hash_mismatch' } });
    expect(verifyBatch(key, eras(2, 3), { seq: 0, hash: GENESIS_HASH }, upgraded)).toMatchObject({ ok: false, broken: { seq: 2, reason: 'hash_mismatch' } });
  });

  it('names a record whose prev_hash does not link, and a gap in seq', () => {
    const relinked = records.map((r) => (r.seq === 3 ? { ...r, prevHash: GENESIS_HASH } : r));
    expect(verifyBatch(key, eras(0), { seq: 0, hash: GENESIS_HASH }, relinked)).toEqual({ ok: false, checked: 2, broken: { id: 'aud_3', seq: 3, reason: 'prev_hash_mismatch' } });
    expect(verifyBatch(key, eras(0), { seq: 0, hash: GENESIS_HASH }, [records[0], records[2]])).toEqual({ ok: false, checked: 1, broken: { id: 'aud_3', seq: 3, reason: 'seq_gap' } });
  });
});

describe('verifyInSlices', () => {
  const many = chain(Array.from({ length: 250 }, (_, i) => body({ id: `aud_${i + 1}`, seq: i + 1 })));

  it('gives verifyBatch\'s answer over slices: the last link, or the first break counted from the first record', async () => {
    await expect(verifyInSlices(key, eras(0), { seq: 0, hash: GENESIS_HASH }, many)).resolves.toEqual({ ok: true, last: { seq: 250, hash: many[249].hash } });
    const tampered = many.map((r) => (r.seq === 150 ? { ...r, data: { z: 2 } } : r));
    await expect(verifyInSlices(key, eras(0), { seq: 0, hash: GENESIS_HASH }, tampered)).resolves.toEqual({ ok: false, checked: 149, broken: { id: 'aud_150', seq: 150, reason: 'hash_mismatch' } });
    // A break at a slice's first record: the link carried over from the slice before is checked.
    const relinked = many.map((r) => (r.seq === 101 ? { ...r, prevHash: GENESIS_HASH } : r));
    await expect(verifyInSlices(key, eras(0), { seq: 0, hash: GENESIS_HASH }, relinked)).resolves.toMatchObject({ ok: false, checked: 100, broken: { seq: 101, reason: 'prev_hash_mismatch' } });
    await expect(verifyInSlices(key, eras(0), { seq: 0, hash: GENESIS_HASH }, [])).resolves.toEqual({ ok: true, last: { seq: 0, hash: GENESIS_HASH } });
  });

  it('lets the event loop turn between slices (a timer or an I/O callback due meanwhile runs before it ends)', async () => {
    let turns = 0;
    let counting = true;
    const tick = (): void => {
      if (!counting) return;
      turns++;
      setImmediate(tick);
    };
    setImmediate(tick);
    await verifyInSlices(key, eras(0), { seq: 0, hash: GENESIS_HASH }, many, 50);
    counting = false;
    // 5 slices: 4 yields, each lets the ticker run once.
    expect(turns).toBeGreaterThanOrEqual(4);
    turns = 0;
    counting = true;
    setImmediate(tick);
    verifyBatch(key, eras(0), { seq: 0, hash: GENESIS_HASH }, many);
    counting = false;
    expect(turns).toBe(0);
  });
});
