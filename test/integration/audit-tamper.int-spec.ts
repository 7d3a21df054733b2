import { QueryBus } from '@nestjs/cqrs';
import { DataSource, EntityManager } from 'typeorm';
import { Principal } from '../../src/common/auth/principal';
import { VerifyAuditChainQuery } from '../../src/modules/audit/application/queries/verify-audit-chain/verify-audit-chain.query';
import { AuditReader } from '../../src/modules/audit/domain/audit-reader';
import { AuditChainKey, AuditRecord, legacyAuditHash, NewAuditRecord } from '../../src/modules/audit/domain/audit-record';
import { AuditTrail } from '../../src/modules/audit/domain/audit-trail';
import { withAppRole } from '../helpers/app-role';
import { startTestApp, TestApp } from '../helpers/test-app';

/**
 * Issue 14, item 5: the attacks of the adversarial test, by a superuser who bypasses triggers
 * (`SET session_replication_role = replica`), and what the service's own role may not do at all.
 * Run on both databases (the embedded one takes the service's role with SET LOCAL ROLE).
 */
const admin = (tenantId: string): Principal => ({ tenantId, subjectId: `admin_${tenantId}`, role: 'admin', keyId: 'key_test' });

function rec(tenantId: string, i: number): NewAuditRecord {
  return {
    tenantId,
    actorSubjectId: 'user_x',
    actorRole: 'member',
    actorKeyId: 'key_x',
    action: `POST /v1/things/${i}`,
    resourceType: 'thing',
    resourceId: `thing_${i}`,
    sessionId: null,
    runId: null,
    requestId: `req_${i}`,
    outcome: 'ok',
    status: 201,
    data: { i, amount: i * 10 },
  };
}

describe('audit tamper evidence against a database writer without the key', () => {
  let t: TestApp;
  let trail: AuditTrail;
  let reader: AuditReader;
  let db: DataSource;
  let queries: QueryBus;
  let key: AuditChainKey;

  beforeAll(async () => {
    t = await startTestApp();
    trail = t.app.get(AuditTrail);
    reader = t.app.get(AuditReader);
    db = t.app.get(DataSource);
    queries = t.app.get(QueryBus);
    key = t.app.get(AuditChainKey);
  });
  afterAll(async () => {
    await t.close();
  });

  const verify = (tenantId: string, batch?: number) => queries.execute(new VerifyAuditChainQuery(admin(tenantId), batch));

  async function chainOf(tenantId: string, n: number): Promise<AuditRecord[]> {
    await trail.enqueue(Array.from({ length: n }, (_, i) => rec(tenantId, i + 1)));
    await trail.flush(tenantId);
    const chain = await reader.readChain(tenantId, 0, 1_000_000, 1000);
    expect(chain.map((r) => r.seq)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    await expect(verify(tenantId)).resolves.toEqual({ ok: true, checked: n });
    return chain;
  }

  /** As a superuser with every trigger (and so every append-only rule) off, like the adversary. */
  const asReplica = <T>(fn: (m: EntityManager) => Promise<T>) =>
    db.transaction(async (m) => {
      await m.query(`SET LOCAL session_replication_role = replica`);
      return fn(m);
    });

  async function headRow(tenantId: string) {
    const [h]: Array<{ last_seq: string; last_hash: string; legacy_until: string; tag: string }> = await db.query(
      `SELECT last_seq, last_hash, legacy_until, tag FROM audit_chain_heads WHERE tenant_id = $1`,
      [tenantId],
    );
    return h;
  }

  async function queued(tenantId: string): Promise<number> {
    const [r]: Array<{ n: number }> = await db.query(`SELECT count(*)::int AS n FROM audit_outbox WHERE tenant_id = $1`, [tenantId]);
    return r.n;
  }

  it('(a) record 5 rewritten and the chain recomputed with SHA-256 (macs left as they were): verify names record 5', async () => {
    const chain = await chainOf('tenant_rewrite', 8);
    // The adversary's recomputation: new data in 5, every hash from 5 on redone as SHA-256, the head moved on.
    let prev = chain[3].hash;
    const forged = chain.slice(4).map((r) => {
      const body = { ...r, data: r.seq === 5 ? { i: 5, amount: 5_000_000 } : r.data };
      const { prevHash: _p, hash: _h, ...fields } = body;
      const hash = legacyAuditHash(prev, fields);
      const out = { ...body, prevHash: prev, hash };
      prev = hash;
      return out;
    });
    await asReplica(async (m) => {
      for (const r of forged) {
        await m.query(`UPDATE audit_records SET data = $2::jsonb, prev_hash = $3, hash = $4 WHERE id = $1`, [r.id, JSON.stringify(r.data), r.prevHash, r.hash]);
      }
      await m.query(`UPDATE audit_chain_heads SET last_hash = $2 WHERE tenant_id = $1`, ['tenant_rewrite', prev]);
    });
    const stored = await reader.readChain('tenant_rewrite', 4, 5, 1);
    expect(stored[0].data).toEqual({ i: 5, amount: 5_000_000 });
    // The SHA-256 hashes recompute (anyone can make them); the mac of record 5 is not the key's for its new hash.
    await expect(verify('tenant_rewrite')).resolves.toEqual({ ok: false, checked: 4, firstBroken: { id: chain[4].id, seq: 5, reason: 'mac_mismatch' } });
    // Small batches: the same answer when record 5 is not in the first batch.
    await expect(verify('tenant_rewrite', 3)).resolves.toEqual({ ok: false, checked: 4, firstBroken: { id: chain[4].id, seq: 5, reason: 'mac_mismatch' } });
  });

  it('(a, control) the same rewrite made WITH the key verifies: the key is all that stops it', async () => {
    const chain = await chainOf('tenant_rewrite_keyed', 6);
    let prev = chain[3].hash;
    const redone = chain.slice(4).map((r) => {
      const { prevHash: _p, hash: _h, mac: _m, ...fields } = { ...r, data: r.seq === 5 ? { changed: true } : r.data };
      const hash = legacyAuditHash(prev, fields);
      const out = { ...fields, prevHash: prev, hash, mac: key.recordMac(hash) };
      prev = hash;
      return out;
    });
    const head = { tenantId: 'tenant_rewrite_keyed', lastSeq: 6, lastHash: prev, legacyUntil: 0 };
    await asReplica(async (m) => {
      for (const r of redone) {
        await m.query(`UPDATE audit_records SET data = $2::jsonb, prev_hash = $3, hash = $4, mac = $5 WHERE id = $1`, [r.id, JSON.stringify(r.data), r.prevHash, r.hash, r.mac]);
      }
      await m.query(`UPDATE audit_chain_heads SET last_hash = $2, tag = $3 WHERE tenant_id = $1`, [head.tenantId, prev, key.headTag(head)]);
    });
    await expect(verify('tenant_rewrite_keyed')).resolves.toEqual({ ok: true, checked: 6 });
  });

  it('(b) the last record deleted and the head rewound: verify fails, and the drain never re-tags that head', async () => {
    const chain = await chainOf('tenant_truncate', 5);
    const before = await headRow('tenant_truncate');
    expect(Number(before.last_seq)).toBe(5);
    await asReplica(async (m) => {
      await m.query(`DELETE FROM audit_records WHERE id = $1`, [chain[4].id]);
      // The adversary has no key: the tag stays (or is redone unkeyed; neither verifies).
      await m.query(`UPDATE audit_chain_heads SET last_seq = 4, last_hash = $2 WHERE tenant_id = $1`, ['tenant_truncate', chain[3].hash]);
    });
    await expect(verify('tenant_truncate')).resolves.toEqual({ ok: false, checked: 4, firstBroken: { id: chain[3].id, seq: 4, reason: 'chain_head_mismatch' } });

    // New records are not chained onto the rewound head (re-tagging it would launder the
    // truncation): they stay queued, nothing is lost, and verify keeps failing.
    await trail.enqueue([rec('tenant_truncate', 6)]);
    await trail.flush('tenant_truncate');
    await expect(queued('tenant_truncate')).resolves.toBe(1);
    expect(Number((await headRow('tenant_truncate')).last_seq)).toBe(4);
    await expect(verify('tenant_truncate')).resolves.toMatchObject({ ok: false, firstBroken: { seq: 4, reason: 'chain_head_mismatch' } });

    // A tag redone with unkeyed SHA-256 (all an adversary can compute) fails the same way.
    const unkeyed = legacyAuditHash(chain[3].hash, { ...chain[3] });
    await asReplica((m) => m.query(`UPDATE audit_chain_heads SET tag = $2 WHERE tenant_id = $1`, ['tenant_truncate', unkeyed]));
    await expect(verify('tenant_truncate')).resolves.toMatchObject({ ok: false, firstBroken: { seq: 4, reason: 'chain_head_mismatch' } });
  });

  it('(b) every record and the head wiped back to seq 0 with a made-up tag: verify fails', async () => {
    await chainOf('tenant_wipe', 3);
    await asReplica(async (m) => {
      await m.query(`DELETE FROM audit_records WHERE tenant_id = $1`, ['tenant_wipe']);
      await m.query(`UPDATE audit_chain_heads SET last_seq = 0, last_hash = repeat('0', 64), tag = repeat('f', 64) WHERE tenant_id = $1`, ['tenant_wipe']);
    });
    await expect(verify('tenant_wipe')).resolves.toEqual({ ok: false, checked: 0, firstBroken: { id: null, seq: 0, reason: 'chain_head_mismatch' } });
  });

  it('chain heads only move forward, for every role that leaves the triggers on (the owner too)', async () => {
    const chain = await chainOf('tenant_heads', 3);
    const head = await headRow('tenant_heads');
    await expect(db.query(`UPDATE audit_chain_heads SET last_seq = 2, last_hash = $2 WHERE tenant_id = $1`, ['tenant_heads', chain[1].hash])).rejects.toThrow(
      /audit_chain_heads only moves forward: UPDATE is not allowed/,
    );
    await expect(db.query(`UPDATE audit_chain_heads SET legacy_until = 3, last_seq = 4 WHERE tenant_id = $1`, ['tenant_heads'])).rejects.toThrow(/only moves forward/);
    await expect(db.query(`DELETE FROM audit_chain_heads WHERE tenant_id = $1`, ['tenant_heads'])).rejects.toThrow(/only moves forward: DELETE is not allowed/);
    await expect(db.query(`TRUNCATE audit_chain_heads`)).rejects.toThrow(/TRUNCATE is not allowed/);
    // Moving it back through the service's own function is refused too (it answers false, nothing changes).
    await expect(db.query(`SELECT audit_chain_advance($1, 2, $2, 'x') AS ok`, ['tenant_heads', chain[1].hash])).resolves.toEqual([{ ok: false }]);
    await expect(headRow('tenant_heads')).resolves.toEqual(head);
    await expect(verify('tenant_heads')).resolves.toEqual({ ok: true, checked: 3 });
  });

  it("(c) the service's role may not change or remove audit records or heads, bypass triggers, or change the schema", async () => {
    const chain = await chainOf('tenant_role', 2);
    const head = await headRow('tenant_role');
    const results = await withAppRole({ databaseUrl: t.databaseUrl === 'embedded' ? null : t.databaseUrl, dataSource: db }, async (asApp) => {
      const who = await asApp(`SELECT current_user AS name, (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS superuser`);
      const tries = {
        updateRecord: await asApp(`UPDATE audit_records SET data = '{"evil":true}'::jsonb WHERE tenant_id = $1`, ['tenant_role']),
        deleteRecord: await asApp(`DELETE FROM audit_records WHERE tenant_id = $1`, ['tenant_role']),
        truncateRecords: await asApp(`TRUNCATE audit_records`),
        updateHead: await asApp(`UPDATE audit_chain_heads SET last_seq = 1, last_hash = $2 WHERE tenant_id = $1`, ['tenant_role', chain[0].hash]),
        deleteHead: await asApp(`DELETE FROM audit_chain_heads WHERE tenant_id = $1`, ['tenant_role']),
        insertHead: await asApp(`INSERT INTO audit_chain_heads (tenant_id, last_seq, last_hash, legacy_until, tag) VALUES ('tenant_fake', 0, 'x', 0, 'y')`),
        replicationRole: await asApp(`SET session_replication_role = replica`),
        disableTrigger: await asApp(`ALTER TABLE audit_records DISABLE TRIGGER audit_records_append_only`),
        dropTrigger: await asApp(`DROP TRIGGER audit_chain_heads_forward_only ON audit_chain_heads`),
        createTable: await asApp(`CREATE TABLE evil (x int)`),
      };
      // What it needs does work: read the trail, lock a head through the function, queue a record.
      const reads = await asApp(`SELECT count(*)::int AS n FROM audit_records WHERE tenant_id = $1`, ['tenant_role']);
      const back = await asApp(`SELECT audit_chain_advance($1, 1, $2, 'x') AS ok`, ['tenant_role', chain[0].hash]);
      return { who, tries, reads, back };
    });
    expect(results.who).toMatchObject({ ok: true, rows: [{ superuser: false }] });
    expect((results.who as { rows: Array<{ name: string }> }).rows[0].name).not.toBe('postgres');
    for (const [name, attempt] of Object.entries(results.tries)) {
      // Refused by privileges (not merely by the append-only triggers, which a superuser can switch off).
      expect({ name, ok: attempt.ok, code: attempt.ok ? null : attempt.code }).toEqual({ name, ok: false, code: '42501' });
      expect({ name, message: attempt.ok ? '' : attempt.message }).toEqual({ name, message: expect.stringMatching(/permission denied|must be owner/) });
    }
    expect(results.reads).toEqual({ ok: true, rows: [{ n: 2 }] });
    expect(results.back).toEqual({ ok: true, rows: [{ ok: false }] });
    await expect(headRow('tenant_role')).resolves.toEqual(head);
    await expect(verify('tenant_role')).resolves.toEqual({ ok: true, checked: 2 });
  });
});
