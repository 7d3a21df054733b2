import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { ConcurrencyConflict } from '../../src/common/errors/domain-error';
import { newId } from '../../src/common/ids/ids';
import { IntegrationEventFeed } from '../../src/common/outbox/integration-events';
import { Attachment } from '../../src/modules/attachments/domain/attachment.aggregate';
import { AttachmentRepository } from '../../src/modules/attachments/domain/attachment.repository';
import { RunPersistence } from '../../src/modules/runs/application/run-persistence';
import { Run } from '../../src/modules/runs/domain/run.aggregate';
import { testEnv, turnEnded } from '../helpers/run-fixture';
import { RunRepository } from '../../src/modules/runs/domain/run.repository';
import { createSession, insertRun, NO_WORKER } from '../helpers/event-fixtures';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * The integration-event outbox (common/outbox) against a real database: runs and attachments
 * write their events in the statement of the change and never without it; the feed takes them
 * oldest first, once, and only together with what the consumer wrote.
 */
describe('integration events (outbox)', () => {
  let t: TestApp;
  let uow: UnitOfWork;
  let runs: RunRepository;
  let persistence: RunPersistence;
  let attachments: AttachmentRepository;
  let feed: IntegrationEventFeed;

  beforeAll(async () => {
    // No worker: nobody takes the events but the test.
    t = await startTestApp(NO_WORKER);
    uow = t.app.get(UnitOfWork);
    runs = t.app.get(RunRepository);
    persistence = t.app.get(RunPersistence);
    attachments = t.app.get(AttachmentRepository);
    feed = t.app.get(IntegrationEventFeed);
  });
  afterAll(async () => {
    await t.close();
  });

  async function eventsOf(objectId: string): Promise<Array<{ tenant_id: string; type: string; payload: Record<string, unknown> }>> {
    return uow.manager.query(`SELECT tenant_id, type, payload FROM integration_events WHERE object_id = $1 ORDER BY id`, [objectId]);
  }

  it('a run that ends writes run.<status> with its save, a stale save writes nothing, and moves that are not notified write nothing', async () => {
    const session = await createSession(t, KEYS.memberA1);
    const owner = await insertRun(t, session);
    const stale = (await runs.findById(owner.runId)) as Run;
    const run = (await runs.findById(owner.runId)) as Run;
    run.decide({ type: 'cancel_requested', requested_by: 'test' }, testEnv());
    await persistence.save(run);
    expect(run.status).toBe('cancelling');
    expect(await eventsOf(owner.runId)).toEqual([]);

    stale.decide({ type: 'failed_unexpectedly' }, testEnv());
    await expect(persistence.save(stale)).rejects.toBeInstanceOf(ConcurrencyConflict);
    expect(await eventsOf(owner.runId)).toEqual([]);

    run.decide({ type: 'tick' }, testEnv()); // a cancelling run's next decision: cancelled
    await persistence.save(run);
    expect(await eventsOf(owner.runId)).toEqual([{ tenant_id: session.tenantId, type: 'run.cancelled', payload: { status: 'cancelled', session_id: session.id } }]);
    // Saved once: a later save of the same run does not publish it again.
    await persistence.save(run);
    expect(await eventsOf(owner.runId)).toHaveLength(1);
  });

  it('a run that waits for a human writes run.requires_action', async () => {
    const session = await createSession(t, KEYS.memberA1);
    const owner = await insertRun(t, session);
    const run = (await runs.findById(owner.runId)) as Run;
    // Its model asks for a client tool: the run waits for the client.
    const tools = { lookup_customer: { risk: 'auto' as const, executor: 'client' as const, idempotent: false } };
    run.decide({ type: 'tick' }, testEnv());
    run.decide(turnEnded(run.state.streaming_message_id!, { toolCalls: [{ id: 'call_1', name: 'lookup_customer' }] }), testEnv({ tools }));
    run.decide({ type: 'tick' }, testEnv({ tools }));
    await persistence.save(run);
    expect(await eventsOf(owner.runId)).toEqual([{ tenant_id: session.tenantId, type: 'run.requires_action', payload: { status: 'waiting_for_tool', session_id: session.id } }]);
  });

  it("an attachment's scan verdict writes attachment.ready / attachment.rejected with its versioned update, and nothing when the update did not match", async () => {
    async function scanning(): Promise<string> {
      const now = new Date();
      const a = Attachment.begin({ id: newId('att'), tenantId: 'tenant_a', subjectId: 'member_a1', filename: 'a.txt', declaredType: 'text/plain', purpose: 'agent_input', storageKey: newId('att'), ttlMs: 3_600_000, now });
      await attachments.insert(a);
      const loaded = (await attachments.findById(a.id))!;
      loaded.completeUpload({ sizeBytes: 1, sha256: 'a'.repeat(64) }, now);
      loaded.startScan(now);
      await attachments.save(loaded);
      return a.id;
    }
    const ready = await scanning();
    const stale = (await attachments.findById(ready))!;
    const a = (await attachments.findById(ready))!;
    await uow.run(async () => {
      a.markReady('text/plain', new Date());
      await attachments.save(a);
    });
    expect(await eventsOf(ready)).toEqual([{ tenant_id: 'tenant_a', type: 'attachment.ready', payload: { status: 'ready', media_type: 'text/plain' } }]);
    stale.reject('malware_detected', null, new Date());
    await expect(attachments.save(stale)).rejects.toBeInstanceOf(ConcurrencyConflict);
    expect(await eventsOf(ready)).toHaveLength(1);

    const rejected = await scanning();
    const r = (await attachments.findById(rejected))!;
    r.reject('malware_detected', null, new Date());
    await attachments.save(r);
    expect(await eventsOf(rejected)).toEqual([{ tenant_id: 'tenant_a', type: 'attachment.rejected', payload: { status: 'rejected', rejection_reason: 'malware_detected' } }]);
    // A transaction that rolls back takes its event with it.
    const rolled = await scanning();
    const x = (await attachments.findById(rolled))!;
    await expect(
      uow.run(async () => {
        x.markReady('text/plain', new Date());
        await attachments.save(x);
        throw new Error('rollback');
      }),
    ).rejects.toThrow('rollback');
    expect(await eventsOf(rolled)).toEqual([]);
  });

  it('the feed takes events oldest first, each once (two takers at once get disjoint sets), and only with what the consumer wrote', async () => {
    // Start from an empty outbox (the tests above left events in it).
    while ((await feed.consume(1000, () => `noop AS (SELECT 1)`)) > 0);
    const session = await createSession(t, KEYS.memberA1);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const owner = await insertRun(t, session);
      const run = (await runs.findById(owner.runId)) as Run;
      run.decide({ type: 'tick' }, testEnv());
      run.decide(turnEnded(run.state.streaming_message_id!, { text: 'done' }), testEnv());
      await persistence.save(run);
      ids.push(owner.runId);
    }
    await uow.manager.query(`CREATE TABLE IF NOT EXISTS outbox_test_taken (taker text, object_id text, id bigint)`);
    const take = (taker: string, limit: number) =>
      feed.consume(limit, (p, taken) => {
        const [name] = p.add(taker);
        return `logged AS (INSERT INTO outbox_test_taken (taker, object_id, id) SELECT ${name}::text, object_id, id FROM ${taken.name})`;
      });

    // A consumer whose statement fails takes nothing.
    await expect(feed.consume(5, (_p, taken) => `bad AS (INSERT INTO outbox_test_taken (taker, object_id, id) SELECT 'x', object_id, id / 0 FROM ${taken.name})`)).rejects.toThrow();
    const [{ n: left }] = await uow.manager.query(`SELECT count(*)::int AS n FROM integration_events`);
    expect(left).toBe(20);

    expect(await take('first', 3)).toBe(3);
    const first: Array<{ object_id: string }> = await uow.manager.query(`SELECT object_id FROM outbox_test_taken WHERE taker = 'first' ORDER BY id`);
    expect(first.map((r) => r.object_id)).toEqual(ids.slice(0, 3));

    const counts = await Promise.all([take('a', 4), take('b', 4), take('c', 4), take('d', 4), take('e', 4)]);
    expect(counts.reduce((x, y) => x + y, 0)).toBe(17);
    const all: Array<{ object_id: string }> = await uow.manager.query(`SELECT object_id FROM outbox_test_taken`);
    expect(all).toHaveLength(20);
    expect(new Set(all.map((r) => r.object_id))).toEqual(new Set(ids));
    await expect(take('late', 10)).resolves.toBe(0);
    await uow.manager.query(`DROP TABLE outbox_test_taken`);
  });
});
