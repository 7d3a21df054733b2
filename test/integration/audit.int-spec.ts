import { QueryBus } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import { Principal } from '../../src/common/auth/principal';
import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { VerifyAuditChainQuery } from '../../src/modules/audit/application/queries/verify-audit-chain/verify-audit-chain.query';
import { AuditReader } from '../../src/modules/audit/domain/audit-reader';
import { AuditChainKey, AuditRecord, auditRecordHash, GENESIS_HASH, NewAuditRecord } from '../../src/modules/audit/domain/audit-record';
import { AuditTrail, runEventToAuditRecord } from '../../src/modules/audit/domain/audit-trail';
import { StoredRunEvent } from '../../src/modules/events/domain/run-event';
import { startTestApp, TestApp } from '../helpers/test-app';

const admin = (tenantId: string): Principal => ({ tenantId, subjectId: `admin_${tenantId}`, role: 'admin', keyId: 'key_test' });

function rec(tenantId: string, action: string, data: Record<string, unknown> = {}): NewAuditRecord {
  return {
    tenantId,
    actorSubjectId: 'user_x',
    actorRole: 'member',
    actorKeyId: 'key_x',
    action,
    resourceType: 'session',
    resourceId: 'sess_x',
    sessionId: 'sess_x',
    runId: null,
    requestId: 'req_x',
    outcome: 'ok',
    status: 200,
    data,
  };
}

describe('audit trail against the database', () => {
  let t: TestApp;
  let trail: AuditTrail;
  let reader: AuditReader;
  let uow: UnitOfWork;
  let db: DataSource;
  let queries: QueryBus;

  beforeAll(async () => {
    t = await startTestApp();
    trail = t.app.get(AuditTrail);
    reader = t.app.get(AuditReader);
    uow = t.app.get(UnitOfWork);
    db = t.app.get(DataSource);
    queries = t.app.get(QueryBus);
  });
  afterAll(async () => {
    await t.close();
  });

  async function seqs(tenantId: string): Promise<number[]> {
    const rows: Array<{ seq: string }> = await db.query(`SELECT seq FROM audit_records WHERE tenant_id = $1 ORDER BY seq`, [tenantId]);
    return rows.map((r) => Number(r.seq));
  }

  /** The tenant's chained records in seq order, read without draining the outbox (so only what a flush chained). */
  async function chainOf(tenantId: string): Promise<AuditRecord[]> {
    return reader.readChain(tenantId, 0, 1_000_000, 1000);
  }

  async function queued(tenantId: string): Promise<number> {
    const rows: Array<{ n: number }> = await db.query(`SELECT count(*)::int AS n FROM audit_outbox WHERE tenant_id = $1`, [tenantId]);
    return rows[0].n;
  }

  it('chains the first record on the genesis hash and stores what it hashed', async () => {
    await trail.enqueue([rec('tenant_genesis', 'first', { nested: { b: 2, a: [1, 'x\u0000'] } })]);
    await trail.flush('tenant_genesis');
    const chain = await chainOf('tenant_genesis');
    expect(chain).toHaveLength(1);
    const [first] = chain;
    expect(first).toMatchObject({
      tenantId: 'tenant_genesis',
      seq: 1,
      prevHash: GENESIS_HASH,
      actorSubjectId: 'user_x',
      actorRole: 'member',
      actorKeyId: 'key_x',
      action: 'first',
      resourceType: 'session',
      resourceId: 'sess_x',
      sessionId: 'sess_x',
      runId: null,
      requestId: 'req_x',
      outcome: 'ok',
      status: 200,
      // What was hashed: a NUL (not storable in jsonb) is replaced before hashing.
      data: { nested: { b: 2, a: [1, 'x\uFFFD'] } },
    });
    expect(first.id).toMatch(/^aud_/);
    const { prevHash, hash, mac, ...body } = first;
    // The public SHA-256 hash, and its mac: HMAC-SHA256 with the app's AUDIT_HMAC_KEY (here generated into its DATA_DIR).
    expect(auditRecordHash(prevHash, body)).toBe(hash);
    expect(t.app.get(AuditChainKey).recordMac(hash)).toBe(mac);
    const head: Array<{ last_seq: string; last_hash: string }> = await db.query(`SELECT last_seq, last_hash FROM audit_chain_heads WHERE tenant_id = 'tenant_genesis'`);
    expect(head.map((h) => [Number(h.last_seq), h.last_hash])).toEqual([[1, hash]]);
    await expect(queued('tenant_genesis')).resolves.toBe(0);
    const page = await reader.list('tenant_genesis', {}, { limit: 10, order: 'asc' });
    expect(page.items).toEqual([first]);
    await expect(queries.execute(new VerifyAuditChainQuery(admin('tenant_genesis')))).resolves.toEqual({ ok: true, checked: 1 });
  });

  it('concurrent enqueues and flushes for one tenant give a gap-free chain that verifies', async () => {
    const actions = (i: number) => [`w${i}.a`, `w${i}.b`, `w${i}.c`];
    // Each writer enqueues its three records and flushes: twelve drains race for the head.
    const writers = Array.from({ length: 12 }, async (_, i) => {
      await trail.enqueue(actions(i).map((a) => rec('tenant_conc', a, { i })));
      await trail.flush('tenant_conc');
    });
    await Promise.all(writers);
    const chain = await chainOf('tenant_conc');
    expect(chain.map((r) => r.seq)).toEqual(Array.from({ length: 36 }, (_, i) => i + 1));
    // Every record chained exactly once, each link on its predecessor's hash.
    expect(chain.map((r) => r.action).sort()).toEqual(Array.from({ length: 12 }, (_, i) => actions(i)).flat().sort());
    chain.forEach((r, k) => expect(r.prevHash).toBe(k === 0 ? GENESIS_HASH : chain[k - 1].hash));
    // Each call's records in the order given (not necessarily consecutive: concurrent INSERTs
    // into the outbox may interleave their ids).
    for (let i = 0; i < 12; i++) expect(chain.filter((r) => r.data.i === i).map((r) => r.action)).toEqual(actions(i));
    await expect(seqs('tenant_conc')).resolves.toEqual(Array.from({ length: 36 }, (_, i) => i + 1));
    const head: Array<{ last_seq: string; last_hash: string }> = await db.query(`SELECT last_seq, last_hash FROM audit_chain_heads WHERE tenant_id = 'tenant_conc'`);
    expect(Number(head[0].last_seq)).toBe(36);
    expect(head[0].last_hash).toBe(chain[35].hash);
    await expect(queued('tenant_conc')).resolves.toBe(0);
    // Small batches: the walk crosses batch boundaries.
    await expect(queries.execute(new VerifyAuditChainQuery(admin('tenant_conc'), 5))).resolves.toEqual({ ok: true, checked: 36 });
  });

  it('two tenants have independent chains, also when enqueued in one call', async () => {
    await Promise.all([
      trail.enqueue([rec('tenant_x', 'a'), rec('tenant_y', 'a')]),
      trail.enqueue([rec('tenant_y', 'b'), rec('tenant_x', 'b')]),
      trail.enqueue([rec('tenant_x', 'c')]),
    ]);
    await trail.flush();
    await expect(seqs('tenant_x')).resolves.toEqual([1, 2, 3]);
    await expect(seqs('tenant_y')).resolves.toEqual([1, 2]);
    const xs = await chainOf('tenant_x');
    const ys = await chainOf('tenant_y');
    expect(xs.map((r) => r.action).sort()).toEqual(['a', 'b', 'c']);
    expect(ys.map((r) => r.action).sort()).toEqual(['a', 'b']);
    expect(xs[0].prevHash).toBe(GENESIS_HASH);
    expect(ys[0].prevHash).toBe(GENESIS_HASH);
    await expect(queries.execute(new VerifyAuditChainQuery(admin('tenant_x')))).resolves.toEqual({ ok: true, checked: 3 });
    await expect(queries.execute(new VerifyAuditChainQuery(admin('tenant_y')))).resolves.toEqual({ ok: true, checked: 2 });
  });

  it("joins the caller's transaction: a rolled-back change leaves no audit record and no chain position", async () => {
    await trail.enqueue([rec('tenant_tx', 'kept')]);
    await expect(
      uow.run(async () => {
        await trail.enqueue([rec('tenant_tx', 'rolled back')]);
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    await uow.run(() => trail.enqueue([rec('tenant_tx', 'kept too')]));
    await trail.flush('tenant_tx');
    const rows: Array<{ seq: string; action: string }> = await db.query(`SELECT seq, action FROM audit_records WHERE tenant_id = 'tenant_tx' ORDER BY seq`);
    expect(rows.map((r) => [Number(r.seq), r.action])).toEqual([
      [1, 'kept'],
      [2, 'kept too'],
    ]);
    await expect(queued('tenant_tx')).resolves.toBe(0);
  });

  it('records run events with their unredacted data', async () => {
    const event: StoredRunEvent = {
      id: 'evt_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B',
      tenantId: 'tenant_ev',
      subjectId: 'user_ev',
      sessionId: 'sess_ev',
      runId: 'run_ev',
      sequence: 3,
      sessionSequence: 7,
      type: 'tool.requested',
      occurredAt: new Date('2025-03-04T05:06:07.089Z'),
      data: { tool_call_id: 'call_1', tool_name: 'create_ticket', arguments: { password: 'hunter2' }, risk: 'approve' },
    };
    await uow.run(() => trail.enqueue([runEventToAuditRecord(event)]));
    await trail.flush('tenant_ev');
    const chain = await chainOf('tenant_ev');
    expect(chain).toHaveLength(1);
    const [stored] = chain;
    expect(stored).toMatchObject({
      seq: 1,
      tenantId: 'tenant_ev',
      action: 'run_event.tool.requested',
      actorRole: 'system',
      actorSubjectId: 'user_ev',
      resourceType: 'run_event',
      resourceId: event.id,
      sessionId: 'sess_ev',
      runId: 'run_ev',
      occurredAt: event.occurredAt,
      data: { type: 'tool.requested', sequence: 3, session_sequence: 7, data: event.data },
    });
    const page = await reader.list('tenant_ev', { runId: 'run_ev' }, { limit: 10, order: 'asc' });
    expect(page.items).toEqual([stored]);
  });

  it('the database refuses UPDATE, DELETE and TRUNCATE on audit_records', async () => {
    await trail.enqueue([rec('tenant_ro', 'x')]);
    await trail.flush('tenant_ro');
    await expect(seqs('tenant_ro')).resolves.toEqual([1]);
    await expect(db.query(`UPDATE audit_records SET data = '{"evil":true}'::jsonb WHERE tenant_id = 'tenant_ro'`)).rejects.toThrow(
      /append-only: UPDATE is not allowed/,
    );
    await expect(db.query(`DELETE FROM audit_records WHERE tenant_id = 'tenant_ro'`)).rejects.toThrow(/append-only: DELETE is not allowed/);
    await expect(db.query(`TRUNCATE audit_records`)).rejects.toThrow(/append-only: TRUNCATE is not allowed/);
    await expect(seqs('tenant_ro')).resolves.toEqual([1]);
  });

  it('verify names the first tampered record (trigger disabled by a superuser, data changed)', async () => {
    await trail.enqueue([rec('tenant_tamper', 'a', { amount: 10 }), rec('tenant_tamper', 'b', { amount: 20 }), rec('tenant_tamper', 'c', { amount: 30 })]);
    await trail.flush('tenant_tamper');
    const records = await chainOf('tenant_tamper');
    expect(records.map((r) => [r.seq, r.action, r.data.amount])).toEqual([
      [1, 'a', 10],
      [2, 'b', 20],
      [3, 'c', 30],
    ]);
    await expect(queries.execute(new VerifyAuditChainQuery(admin('tenant_tamper')))).resolves.toEqual({ ok: true, checked: 3 });
    await db.transaction(async (m) => {
      await m.query(`ALTER TABLE audit_records DISABLE TRIGGER audit_records_append_only`);
      await m.query(`UPDATE audit_records SET data = '{"amount": 2000}'::jsonb WHERE id = $1`, [records[1].id]);
      await m.query(`ALTER TABLE audit_records ENABLE TRIGGER audit_records_append_only`);
    });
    await expect(queries.execute(new VerifyAuditChainQuery(admin('tenant_tamper')))).resolves.toEqual({
      ok: false,
      checked: 1,
      firstBroken: { id: records[1].id, seq: 2, reason: 'hash_mismatch' },
    });
    // The trigger is back: the tamperer can't quietly repair it either.
    await expect(db.query(`UPDATE audit_records SET data = '{"amount": 20}'::jsonb WHERE id = $1`, [records[1].id])).rejects.toThrow(/append-only/);
  });

  it('verify notices a deleted tail record through the chain head', async () => {
    await trail.enqueue([rec('tenant_tail', 'a'), rec('tenant_tail', 'b')]);
    await trail.flush('tenant_tail');
    const records = await chainOf('tenant_tail');
    expect(records.map((r) => [r.seq, r.action])).toEqual([
      [1, 'a'],
      [2, 'b'],
    ]);
    await db.transaction(async (m) => {
      await m.query(`ALTER TABLE audit_records DISABLE TRIGGER audit_records_append_only`);
      await m.query(`DELETE FROM audit_records WHERE id = $1`, [records[1].id]);
      await m.query(`ALTER TABLE audit_records ENABLE TRIGGER audit_records_append_only`);
    });
    await expect(queries.execute(new VerifyAuditChainQuery(admin('tenant_tail')))).resolves.toEqual({
      ok: false,
      checked: 1,
      firstBroken: { id: null, seq: 2, reason: 'seq_gap' },
    });
  });
});
