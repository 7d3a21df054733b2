import { QueryBus } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import { Principal } from '../../src/common/auth/principal';
import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { VerifyAuditChainQuery } from '../../src/modules/audit/application/queries/verify-audit-chain/verify-audit-chain.query';
import { AuditReader } from '../../src/modules/audit/domain/audit-reader';
import { auditHash, GENESIS_HASH, NewAuditRecord } from '../../src/modules/audit/domain/audit-record';
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

  it('chains the first record on the genesis hash and stores what it hashed', async () => {
    const [first] = await trail.append([rec('tenant_genesis', 'first', { nested: { b: 2, a: [1, 'x\u0000'] } })]);
    expect(first).toMatchObject({ seq: 1, prevHash: GENESIS_HASH });
    expect(first.id).toMatch(/^aud_/);
    const [stored] = await reader.readChain('tenant_genesis', 0, 10, 10);
    expect(stored).toEqual(first);
    const { prevHash, hash, ...body } = stored;
    expect(auditHash(prevHash, body)).toBe(hash);
    await expect(queries.execute(new VerifyAuditChainQuery(admin('tenant_genesis')))).resolves.toEqual({ ok: true, checked: 1 });
  });

  it('concurrent appends for one tenant give a gap-free chain that verifies', async () => {
    const writers = Array.from({ length: 12 }, (_, i) =>
      trail.append([rec('tenant_conc', `w${i}.a`, { i }), rec('tenant_conc', `w${i}.b`, { i }), rec('tenant_conc', `w${i}.c`, { i })]),
    );
    const results = await Promise.all(writers);
    // Each call's records are consecutive: the head lock is held for the whole call.
    for (const r of results) expect(r.map((x) => x.seq)).toEqual([r[0].seq, r[0].seq + 1, r[0].seq + 2]);
    await expect(seqs('tenant_conc')).resolves.toEqual(Array.from({ length: 36 }, (_, i) => i + 1));
    const head: Array<{ last_seq: string }> = await db.query(`SELECT last_seq FROM audit_chain_heads WHERE tenant_id = 'tenant_conc'`);
    expect(Number(head[0].last_seq)).toBe(36);
    // Small batches: the walk crosses batch boundaries.
    await expect(queries.execute(new VerifyAuditChainQuery(admin('tenant_conc'), 5))).resolves.toEqual({ ok: true, checked: 36 });
  });

  it('two tenants have independent chains, also when appended in one call', async () => {
    await Promise.all([
      trail.append([rec('tenant_x', 'a'), rec('tenant_y', 'a')]),
      trail.append([rec('tenant_y', 'b'), rec('tenant_x', 'b')]),
      trail.append([rec('tenant_x', 'c')]),
    ]);
    await expect(seqs('tenant_x')).resolves.toEqual([1, 2, 3]);
    await expect(seqs('tenant_y')).resolves.toEqual([1, 2]);
    const [x1] = await reader.readChain('tenant_x', 0, 1, 1);
    const [y1] = await reader.readChain('tenant_y', 0, 1, 1);
    expect(x1.prevHash).toBe(GENESIS_HASH);
    expect(y1.prevHash).toBe(GENESIS_HASH);
    await expect(queries.execute(new VerifyAuditChainQuery(admin('tenant_x')))).resolves.toEqual({ ok: true, checked: 3 });
    await expect(queries.execute(new VerifyAuditChainQuery(admin('tenant_y')))).resolves.toEqual({ ok: true, checked: 2 });
  });

  it("joins the caller's transaction: a rolled-back change leaves no audit record and no chain position", async () => {
    await trail.append([rec('tenant_tx', 'kept')]);
    await expect(
      uow.run(async () => {
        await trail.append([rec('tenant_tx', 'rolled back')]);
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    await trail.append([rec('tenant_tx', 'kept too')]);
    const rows: Array<{ seq: string; action: string }> = await db.query(`SELECT seq, action FROM audit_records WHERE tenant_id = 'tenant_tx' ORDER BY seq`);
    expect(rows.map((r) => [Number(r.seq), r.action])).toEqual([
      [1, 'kept'],
      [2, 'kept too'],
    ]);
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
    const [stored] = await uow.run(() => trail.append([runEventToAuditRecord(event)]));
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
    await trail.append([rec('tenant_ro', 'x')]);
    await expect(db.query(`UPDATE audit_records SET data = '{"evil":true}'::jsonb WHERE tenant_id = 'tenant_ro'`)).rejects.toThrow(
      /append-only: UPDATE is not allowed/,
    );
    await expect(db.query(`DELETE FROM audit_records WHERE tenant_id = 'tenant_ro'`)).rejects.toThrow(/append-only: DELETE is not allowed/);
    await expect(db.query(`TRUNCATE audit_records`)).rejects.toThrow(/append-only: TRUNCATE is not allowed/);
    await expect(seqs('tenant_ro')).resolves.toEqual([1]);
  });

  it('verify names the first tampered record (trigger disabled by a superuser, data changed)', async () => {
    const records = await trail.append([rec('tenant_tamper', 'a', { amount: 10 }), rec('tenant_tamper', 'b', { amount: 20 }), rec('tenant_tamper', 'c', { amount: 30 })]);
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
    const records = await trail.append([rec('tenant_tail', 'a'), rec('tenant_tail', 'b')]);
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
