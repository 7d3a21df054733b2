import { QueryBus } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import { Principal } from '../../src/common/auth/principal';
import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { VerifyAuditChainQuery } from '../../src/modules/audit/application/queries/verify-audit-chain/verify-audit-chain.query';
import { AuditReader } from '../../src/modules/audit/domain/audit-reader';
import { AuditTrail } from '../../src/modules/audit/domain/audit-trail';
import { AuditTypeormTrail } from '../../src/modules/audit/infrastructure/audit.typeorm-trail';
import { StoredRunEvent } from '../../src/modules/events/domain/run-event';
import { startTestApp, TestApp } from '../helpers/test-app';

const admin = (tenantId: string): Principal => ({ tenantId, subjectId: `admin_${tenantId}`, role: 'admin', keyId: 'key_test' });

function event(tenantId: string, runId: string, sequence: number, data: Record<string, unknown> = {}): StoredRunEvent {
  return {
    id: `evt_${runId}_${sequence}`,
    tenantId,
    subjectId: 'user_q',
    sessionId: `sess_${runId}`,
    runId,
    sequence,
    sessionSequence: sequence,
    type: 'message.delta',
    occurredAt: new Date(Date.UTC(2025, 0, 1, 0, 0, 0, sequence)),
    data: { message_id: 'msg_q', content_index: 0, delta: `d${sequence}`, ...data },
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

  const chained = async (tenantId: string) =>
    (await db.query(`SELECT seq, resource_id FROM audit_records WHERE tenant_id = $1 ORDER BY seq`, [tenantId])) as Array<{ seq: string; resource_id: string }>;

  it('records committed run events exactly once, in order, with their unredacted data, and the chain verifies', async () => {
    const events = Array.from({ length: 5 }, (_, i) => event('tenant_q1', 'run_q1', i + 1, i === 2 ? { password: 'hunter2' } : {}));
    await uow.run(async () => {
      await trail.recordRunEvents(events.slice(0, 2));
      await trail.recordRunEvents(events.slice(2));
    });
    const page = await reader.list('tenant_q1', { runId: 'run_q1' }, { limit: 10, order: 'asc' });
    expect(page.items.map((r) => r.resourceId)).toEqual(events.map((e) => e.id));
    expect(page.items.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(page.items[2]).toMatchObject({
      action: 'run_event.message.delta',
      actorRole: 'system',
      actorSubjectId: 'user_q',
      occurredAt: events[2].occurredAt,
      data: { type: 'message.delta', sequence: 3, session_sequence: 3, data: events[2].data },
    });
    // A second drain (the background one, another node) chains nothing twice.
    await trail.flush();
    await expect(chained('tenant_q1')).resolves.toHaveLength(5);
    await expect(db.query(`SELECT count(*)::int AS n FROM audit_outbox WHERE tenant_id = 'tenant_q1'`)).resolves.toEqual([{ n: 0 }]);
    await expect(queries.execute(new VerifyAuditChainQuery(admin('tenant_q1')))).resolves.toEqual({ ok: true, checked: 5 });
  });

  it('queues nothing when the transaction rolls back', async () => {
    await expect(
      uow.run(async () => {
        await trail.recordRunEvents([event('tenant_q2', 'run_q2', 1)]);
        throw new Error('rollback');
      }),
    ).rejects.toThrow('rollback');
    await trail.flush();
    await expect(chained('tenant_q2')).resolves.toEqual([]);
    await expect(db.query(`SELECT count(*)::int AS n FROM audit_outbox WHERE tenant_id = 'tenant_q2'`)).resolves.toEqual([{ n: 0 }]);
  });

  it('concurrent writers and drains chain every record once, gap-free, keeping each run in sequence order', async () => {
    const runs = ['run_c1', 'run_c2', 'run_c3'];
    const perRun = 40;
    await Promise.all([
      ...runs.map(async (runId) => {
        for (let s = 1; s <= perRun; s += 4) {
          await uow.run(() => trail.recordRunEvents([0, 1, 2, 3].map((k) => event('tenant_q3', runId, s + k))));
        }
      }),
      trail.flush('tenant_q3'),
      trail.flush(),
    ]);
    await trail.flush('tenant_q3');
    const rows = await chained('tenant_q3');
    expect(rows.map((r) => Number(r.seq))).toEqual(Array.from({ length: runs.length * perRun }, (_, i) => i + 1));
    expect(new Set(rows.map((r) => r.resource_id)).size).toBe(runs.length * perRun);
    for (const runId of runs) {
      const order = rows.filter((r) => r.resource_id.startsWith(`evt_${runId}_`)).map((r) => Number(r.resource_id.split('_').pop()));
      expect(order).toEqual(Array.from({ length: perRun }, (_, i) => i + 1));
    }
    await expect(queries.execute(new VerifyAuditChainQuery(admin('tenant_q3')))).resolves.toEqual({ ok: true, checked: runs.length * perRun });
  });

  it('chains queued records left by a previous process when the app starts', async () => {
    // As a crash between commit and drain leaves them: queued rows, nothing chained.
    const e = event('tenant_q4', 'run_q4', 1);
    await db.query(`INSERT INTO audit_outbox (tenant_id, record) VALUES ($1, $2::jsonb)`, [
      'tenant_q4',
      JSON.stringify({
        tenantId: 'tenant_q4',
        occurredAt: e.occurredAt.toISOString(),
        actorSubjectId: 'user_q',
        actorRole: 'system',
        actorKeyId: null,
        action: 'run_event.message.delta',
        resourceType: 'run_event',
        resourceId: e.id,
        sessionId: e.sessionId,
        runId: e.runId,
        requestId: null,
        outcome: 'ok',
        status: null,
        data: { type: e.type, sequence: 1, session_sequence: 1, data: e.data },
      }),
    ]);
    await expect(db.query(`SELECT count(*)::int AS n FROM audit_records WHERE tenant_id = 'tenant_q4'`)).resolves.toEqual([{ n: 0 }]);
    // What a starting node does: drain what is queued.
    (trail as AuditTypeormTrail).onApplicationBootstrap();
    const rows = async () => (await db.query(`SELECT resource_id FROM audit_records WHERE tenant_id = 'tenant_q4'`)) as unknown[];
    for (let i = 0; i < 100 && (await rows()).length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    await expect(rows()).resolves.toEqual([{ resource_id: e.id }]);
  });
});
