import { QueryBus } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import { Principal } from '../../src/common/auth/principal';
import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { VerifyAuditChainQuery } from '../../src/modules/audit/application/queries/verify-audit-chain/verify-audit-chain.query';
import { AuditReader } from '../../src/modules/audit/domain/audit-reader';
import { AuditTrail } from '../../src/modules/audit/domain/audit-trail';
import { AuditTypeormTrail } from '../../src/modules/audit/infrastructure/audit.typeorm-trail';
import { EventStore, NewRunEvent } from '../../src/modules/events/domain/run-event';
import { createSession, insertRun, NO_WORKER } from '../helpers/event-fixtures';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

const admin = (tenantId: string): Principal => ({ tenantId, subjectId: `admin_${tenantId}`, role: 'admin', keyId: 'key_test' });

const delta = (i: number, extra: Record<string, unknown> = {}): NewRunEvent => ({
  type: 'message.delta',
  data: { message_id: 'msg_q', content_index: 0, delta: `d${i}`, ...extra },
});

function requestRecord(i: number) {
  return {
    tenantId: 'tenant_x',
    occurredAt: new Date(Date.UTC(2025, 0, 1, 0, 0, 0, i)),
    actorSubjectId: 'user_q',
    actorRole: 'member' as const,
    actorKeyId: 'key_q',
    action: 'request.create_session',
    resourceType: 'session',
    resourceId: `sess_q5_${String(i).padStart(2, '0')}`,
    sessionId: null,
    runId: null,
    requestId: `req_${i}`,
    outcome: 'ok' as const,
    status: 201,
    data: {},
  };
}

/** Run-event audit records go through the outbox: durable with the event, chained after commit. */
describe('audit outbox (run events off the chain lock)', () => {
  let t: TestApp;
  let trail: AuditTrail;
  let reader: AuditReader;
  let uow: UnitOfWork;
  let db: DataSource;
  let queries: QueryBus;
  let store: EventStore;

  beforeAll(async () => {
    t = await startTestApp(NO_WORKER);
    trail = t.app.get(AuditTrail);
    reader = t.app.get(AuditReader);
    uow = t.app.get(UnitOfWork);
    db = t.app.get(DataSource);
    queries = t.app.get(QueryBus);
    store = t.app.get(EventStore);
  });

  const newRun = async () => insertRun(t, await createSession(t, KEYS.memberA1));
  const ofRun = async (runId: string) =>
    (await db.query(`SELECT seq, resource_id, action FROM audit_records WHERE run_id = $1 ORDER BY seq`, [runId])) as Array<{ seq: string; resource_id: string; action: string }>;
  afterAll(async () => {
    await t.close();
  });

  const chained = async (tenantId: string) =>
    (await db.query(`SELECT seq, resource_id FROM audit_records WHERE tenant_id = $1 ORDER BY seq`, [tenantId])) as Array<{ seq: string; resource_id: string }>;

  it('queues the audit record of every inserted run event in the same statement, chains each exactly once, in order, unredacted', async () => {
    const owner = await newRun();
    const events = [1, 2, 3, 4, 5].map((i) => delta(i, i === 3 ? { password: 'hunter2' } : {}));
    const stored = await uow.run(async () => [...(await store.append(owner, events.slice(0, 2))), ...(await store.append(owner, events.slice(2)))]);
    // Queued by the database with the events (trigger run_events_audit), before any drain.
    const page = await reader.list('tenant_a', { runId: owner.runId }, { limit: 10, order: 'asc' });
    expect(page.items.map((r) => r.resourceId)).toEqual(stored.map((e) => e.id));
    const seqs = page.items.map((r) => r.seq);
    expect(seqs).toEqual(seqs.map((_, i) => seqs[0] + i));
    expect(page.items[2]).toMatchObject({
      action: 'run_event.message.delta',
      actorRole: 'system',
      actorSubjectId: owner.subjectId,
      sessionId: owner.sessionId,
      runId: owner.runId,
      occurredAt: stored[2].occurredAt,
      data: { type: 'message.delta', sequence: 3, session_sequence: stored[2].sessionSequence, data: events[2].data },
    });
    // A second drain (the background one, another node) chains nothing twice.
    await trail.flush();
    await expect(ofRun(owner.runId)).resolves.toHaveLength(5);
    await expect(db.query(`SELECT count(*)::int AS n FROM audit_outbox`)).resolves.toEqual([{ n: 0 }]);
    const verified = await queries.execute(new VerifyAuditChainQuery(admin('tenant_a')));
    expect(verified).toMatchObject({ ok: true });
  });

  it('queues nothing when the transaction rolls back', async () => {
    const owner = await newRun();
    await expect(
      uow.run(async () => {
        await store.append(owner, [delta(1)]);
        throw new Error('rollback');
      }),
    ).rejects.toThrow('rollback');
    await expect(db.query(`SELECT count(*)::int AS n FROM audit_outbox WHERE record->'run_event'->>'run_id' = $1`, [owner.runId])).resolves.toEqual([{ n: 0 }]);
    await trail.flush();
    await expect(ofRun(owner.runId)).resolves.toEqual([]);
  });

  it('concurrent writers and drains chain every record once, gap-free, keeping each run in sequence order', async () => {
    const owners = [await newRun(), await newRun(), await newRun()];
    const perRun = 40;
    await Promise.all([
      ...owners.map(async (owner) => {
        for (let s = 1; s <= perRun; s += 4) await uow.run(() => store.append(owner, [0, 1, 2, 3].map((k) => delta(s + k))));
      }),
      trail.flush('tenant_a'),
      trail.flush(),
    ]);
    await trail.flush('tenant_a');
    const all = (await db.query(`SELECT seq FROM audit_records WHERE tenant_id = 'tenant_a' ORDER BY seq`)) as Array<{ seq: string }>;
    expect(all.map((r) => Number(r.seq))).toEqual(all.map((_, i) => i + 1));
    for (const owner of owners) {
      const rows = await ofRun(owner.runId);
      expect(rows).toHaveLength(perRun);
      const sequences = (await db.query(`SELECT e.sequence FROM audit_records a JOIN run_events e ON e.id = a.resource_id WHERE a.run_id = $1 ORDER BY a.seq`, [
        owner.runId,
      ])) as Array<{ sequence: string }>;
      expect(sequences.map((r) => Number(r.sequence))).toEqual(Array.from({ length: perRun }, (_, i) => i + 1));
    }
    await expect(queries.execute(new VerifyAuditChainQuery(admin('tenant_a')))).resolves.toEqual({ ok: true, checked: all.length });
  });

  it('enqueued records outside a transaction are durable at once and chained in the background, in order, by few drains', async () => {
    const records = Array.from({ length: 30 }, (_, i) => ({ ...requestRecord(i + 1), tenantId: 'tenant_q5' }));
    const drains = jest.spyOn(trail as unknown as { drainAll: () => Promise<void> }, 'drainAll');
    try {
      // 30 separate autocommit writes, as 30 concurrent requests' audit records are.
      await Promise.all(records.map((r) => trail.enqueue([r])));
      // Durable once enqueue returns: queued, or already chained by a drain that was due anyway.
      await expect(
        db.query(`SELECT (SELECT count(*) FROM audit_outbox WHERE tenant_id = 'tenant_q5') + (SELECT count(*) FROM audit_records WHERE tenant_id = 'tenant_q5') AS n`),
      ).resolves.toEqual([{ n: '30' }]);
      // No reader flush: the background drain chains them shortly after.
      for (let i = 0; i < 100 && (await chained('tenant_q5')).length < 30; i++) await new Promise((r) => setTimeout(r, 20));
      const rows = await chained('tenant_q5');
      expect(rows.map((r) => Number(r.seq))).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
      expect(new Set(rows.map((r) => r.resource_id))).toEqual(new Set(records.map((r) => r.resourceId)));
      // The drain waits a moment after the first record, so 30 commits are chained by a few drains, not 30.
      expect(drains.mock.calls.length).toBeGreaterThanOrEqual(1);
      expect(drains.mock.calls.length).toBeLessThanOrEqual(5);
    } finally {
      drains.mockRestore();
    }
    await expect(queries.execute(new VerifyAuditChainQuery(admin('tenant_q5')))).resolves.toEqual({ ok: true, checked: 30 });
  });

  it('chains queued records left by a previous process when the app starts (both queued formats)', async () => {
    // As a crash between commit and drain leaves them: queued rows, nothing chained. One as the
    // run_events trigger queues it, one as enqueue() (and earlier versions) wrote it.
    const occurredAt = new Date(Date.UTC(2025, 0, 1, 0, 0, 0, 1));
    const row = {
      id: 'evt_q4_1',
      tenant_id: 'tenant_q4',
      subject_id: 'user_q',
      session_id: 'sess_q4',
      run_id: 'run_q4',
      sequence: 1,
      session_sequence: 9,
      type: 'message.delta',
      data: { message_id: 'msg_q', content_index: 0, delta: 'd1' },
      occurred_at: '2025-01-01T00:00:00.001+00:00',
    };
    await db.query(`INSERT INTO audit_outbox (tenant_id, record) VALUES ($1, $2::jsonb), ($1, $3::jsonb)`, [
      'tenant_q4',
      JSON.stringify({ run_event: row }),
      JSON.stringify({
        tenantId: 'tenant_q4',
        occurredAt: occurredAt.toISOString(),
        actorSubjectId: 'user_q',
        actorRole: 'member',
        actorKeyId: 'key_q',
        action: 'request.cancel_run',
        resourceType: 'run',
        resourceId: 'run_q4',
        sessionId: 'sess_q4',
        runId: 'run_q4',
        requestId: 'req_q4',
        outcome: 'ok',
        status: 202,
        data: {},
      }),
    ]);
    await expect(db.query(`SELECT count(*)::int AS n FROM audit_records WHERE tenant_id = 'tenant_q4'`)).resolves.toEqual([{ n: 0 }]);
    // What a starting node does: drain what is queued.
    (trail as AuditTypeormTrail).onApplicationBootstrap();
    const rows = async () => (await db.query(`SELECT resource_id FROM audit_records WHERE tenant_id = 'tenant_q4'`)) as unknown[];
    for (let i = 0; i < 100 && (await rows()).length < 2; i++) await new Promise((r) => setTimeout(r, 50));
    const page = await reader.list('tenant_q4', {}, { limit: 10, order: 'asc' });
    expect(page.items).toHaveLength(2);
    expect(page.items[0]).toMatchObject({
      seq: 1,
      action: 'run_event.message.delta',
      actorRole: 'system',
      actorSubjectId: 'user_q',
      resourceType: 'run_event',
      resourceId: 'evt_q4_1',
      sessionId: 'sess_q4',
      runId: 'run_q4',
      occurredAt,
      data: { type: 'message.delta', sequence: 1, session_sequence: 9, data: row.data },
    });
    expect(page.items[1]).toMatchObject({ seq: 2, action: 'request.cancel_run', actorRole: 'member', resourceId: 'run_q4', status: 202 });
  });
});
