import { DataSource } from 'typeorm';
import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { ConcurrencyConflict } from '../../src/common/errors/domain-error';
import { newId } from '../../src/common/ids/ids';
import { RunPersistence } from '../../src/modules/runs/application/run-persistence';
import { DEFAULT_LIMITS, Run, SteeredInput } from '../../src/modules/runs/domain/run.aggregate';
import { testEnv } from '../helpers/run-fixture';

/** A steered input (its message need not exist: the run only holds it). */
const steered = (id: string): SteeredInput => ({ message_id: id, accepted_at: new Date().toISOString(), model: 'scripted', limits: DEFAULT_LIMITS, metadata: {} });
import { RunRepository } from '../../src/modules/runs/domain/run.repository';
import { append, createSession, deltas, insertRun, NO_WORKER } from '../helpers/event-fixtures';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/** The runs repository's own SQL (plain statements, not the ORM's), against a real database. */
describe('RunRepository', () => {
  let t: TestApp;
  let runs: RunRepository;
  let uow: UnitOfWork;
  let persistence: RunPersistence;

  beforeAll(async () => {
    t = await startTestApp(NO_WORKER);
    runs = t.app.get(RunRepository);
    uow = t.app.get(UnitOfWork);
    persistence = t.app.get(RunPersistence);
  });
  afterAll(async () => {
    await t.close();
  });

  /** RunRepository.claimBatch: one statement leases a burst of runs, FIFO per session, never twice. */
  describe('claimBatch', () => {
    /** A queued run, created `ageMs` ago, leased by nobody. */
    async function queued(session: { id: string; tenantId: string; subjectId: string }, ageMs: number): Promise<string> {
      const { runId } = await insertRun(t, session, 'queued');
      await uow.manager.query(`UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL, created_at = now() - ($2 || ' milliseconds')::interval WHERE id = $1`, [
        runId,
        String(ageMs),
      ]);
      return runId;
    }

    it('leases the oldest claimable runs, only the first queued run of each session, and returns them oldest first', async () => {
      const a = await createSession(t, KEYS.memberA1);
      const b = await createSession(t, KEYS.memberA2);
      const a1 = await queued(a, 5000);
      const a2 = await queued(a, 4000); // behind a1 in its session: not claimable yet
      const b1 = await queued(b, 4500);
      const b2 = await queued(b, 1000);
      const claimed = await runs.claimBatch('node-x', 30_000, 10);
      expect(claimed.map((r) => r.id)).toEqual([a1, b1]);
      for (const r of claimed) expect(r.snapshot()).toMatchObject({ status: 'queued' });
      const leases: Array<{ lease_owner: string }> = await uow.manager.query(`SELECT lease_owner FROM runs WHERE id = ANY($1::text[])`, [[a1, b1]]);
      expect(leases.map((l) => l.lease_owner)).toEqual(['node-x', 'node-x']);
      // Leased: nobody else gets them; the runs behind them wait for them to end.
      await expect(runs.claimBatch('node-y', 30_000, 10)).resolves.toEqual([]);
      await uow.manager.query(`UPDATE runs SET status = 'completed' WHERE id = ANY($1::text[])`, [[a1, b1]]);
      const next = await runs.claimBatch('node-y', 30_000, 1);
      expect(next.map((r) => r.id)).toEqual([a2]);
      const rest = await runs.claimBatch('node-y', 30_000, 10);
      expect(rest.map((r) => r.id)).toEqual([b2]);
    });

    it('two nodes claiming at once never get the same run', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) ids.push(await queued(await createSession(t, KEYS.memberA1), 1000 + i));
      const [x, y] = await Promise.all([runs.claimBatch('node-1', 30_000, 8), runs.claimBatch('node-2', 30_000, 8)]);
      const all = [...x, ...y].map((r) => r.id);
      expect(new Set(all).size).toBe(all.length);
      expect(all.sort()).toEqual([...ids].sort());
    });
  });

  /** RunRepository.findView (GET /v1/runs/{id}) must read exactly what the aggregate path reads. */
  describe('findView', () => {
    async function expectSameAsAggregate(runId: string) {
      const view = await runs.findView(runId);
      const run = await runs.findById(runId);
      expect(view).not.toBeNull();
      expect(view!.run).toEqual(run!.snapshot());
      for (const k of ['createdAt', 'updatedAt', 'queueExpiresAt', 'startedAt', 'finishedAt'] as const) {
        expect(view!.run[k]).toBeInstanceOf(Date);
      }
      return view!;
    }

    it('reads every field (json, text, dates with and without milliseconds, nulls) and the last sequence', async () => {
      const session = await createSession(t, KEYS.memberA1);
      const owner = await insertRun(t, session);
      await uow.manager.query(
        `UPDATE runs SET error = $2::jsonb, metadata = $3::jsonb, state = $4::jsonb, termination_reason = 'max_steps',
                final_message_id = 'msg_final', step_count = 3,
                started_at = '2026-01-02T03:04:05.678Z', finished_at = '2026-01-02T03:04:06Z', cancel_requested_at = NULL
          WHERE id = $1`,
        [
          owner.runId,
          JSON.stringify({ code: 'tool_failed', message: 'quote " backslash \\ newline \n unicode ü 🚀', details: { n: 1.5, list: [1, null, 'x'] } }),
          JSON.stringify({ 'key with space': 'välue', empty: '' }),
          JSON.stringify({ pending: [{ tool_call_id: 'call_1', tool_name: 'lookup', status: 'awaiting_client', arguments: { q: 'x' } }], streaming_message_id: null }),
        ],
      );
      const before = await expectSameAsAggregate(owner.runId);
      expect(before.lastSequence).toBe(0);
      expect(before.run.startedAt!.toISOString()).toBe('2026-01-02T03:04:05.678Z');
      expect(before.run.finishedAt!.toISOString()).toBe('2026-01-02T03:04:06.000Z');
      expect(before.run.error).toEqual({ code: 'tool_failed', message: 'quote " backslash \\ newline \n unicode ü 🚀', details: { n: 1.5, list: [1, null, 'x'] } });

      await append(t, owner, deltas(3));
      expect((await runs.findView(owner.runId))!.lastSequence).toBe(3);
    });

    it('gives the same instants whatever the session time zone', async () => {
      const session = await createSession(t, KEYS.memberA1);
      const owner = await insertRun(t, session);
      await uow.manager.query(`UPDATE runs SET started_at = '2026-03-04T05:06:07.089Z' WHERE id = $1`, [owner.runId]);
      const inKolkata = await uow.run(async (m) => {
        await m.query(`SET LOCAL TIME ZONE 'Asia/Kolkata'`);
        return runs.findView(owner.runId);
      });
      expect(inKolkata!.run.startedAt!.toISOString()).toBe('2026-03-04T05:06:07.089Z');
      expect(inKolkata!.run).toEqual((await runs.findById(owner.runId))!.snapshot());
    });

    it('is null for a missing run', async () => {
      await expect(runs.findView('run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B')).resolves.toBeNull();
    });
  });

  /**
   * RunPersistence.saveWithMessage: the run's versioned UPDATE, its events and a message write in
   * one statement. Nothing of it may land when the version check fails.
   */
  describe('saveWithMessage', () => {
    async function sessionState(sessionId: string) {
      const [row] = await uow.manager.query(`SELECT revision, message_seq FROM sessions WHERE id = $1`, [sessionId]);
      return { revision: Number(row.revision), messageSeq: Number(row.message_seq) };
    }
    async function messageRow(id: string) {
      const rows = await uow.manager.query(`SELECT status, sequence, content, role, run_id FROM messages WHERE id = $1`, [id]);
      return rows[0] ?? null;
    }
    async function eventTypes(runId: string): Promise<string[]> {
      const rows: Array<{ type: string }> = await uow.manager.query(`SELECT type FROM run_events WHERE run_id = $1 ORDER BY sequence`, [runId]);
      return rows.map((r) => r.type);
    }
    function newMessage(owner: { tenantId: string; subjectId: string; sessionId: string; runId: string }, id: string) {
      return { id, tenantId: owner.tenantId, subjectId: owner.subjectId, sessionId: owner.sessionId, runId: owner.runId, role: 'assistant' as const, status: 'streaming' as const, content: [], metadata: {} };
    }

    it('appends the message at the session\'s next slot with the run\'s events, bumping the session revision once', async () => {
      const session = await createSession(t, KEYS.memberA1);
      const owner = await insertRun(t, session);
      const before = await sessionState(session.id);
      const run = (await runs.findById(owner.runId)) as Run;
      const id = newId('msg');
      run.decide({ type: 'tick' }, testEnv({ ids: [id] })); // a running run's next turn
      await persistence.saveWithMessage(run, { kind: 'append', message: newMessage(owner, id) });
      expect(await messageRow(id)).toMatchObject({ status: 'streaming', sequence: before.messageSeq + 1, role: 'assistant', run_id: owner.runId });
      expect(await sessionState(session.id)).toEqual({ revision: before.revision + 1, messageSeq: before.messageSeq + 1 });
      expect(await eventTypes(owner.runId)).toEqual(['message.started']);
      expect((await runs.findById(owner.runId))!.snapshot().version).toBe(run.snapshot().version);

      // An update rides the same way.
      run.decide({ type: 'interrupted_turn_read', message_id: id, content: [{ type: 'text', text: 'hi' }] }, testEnv());
      await persistence.saveWithMessage(run, { kind: 'update', id, changes: { status: 'completed', content: [{ type: 'text', text: 'hi' }] } });
      expect(await messageRow(id)).toMatchObject({ status: 'completed', content: [{ type: 'text', text: 'hi' }] });
      expect(await eventTypes(owner.runId)).toEqual(['message.started', 'message.completed']);
    });

    it('writes nothing (no message, no session bump, no events) when the run changed since it was read', async () => {
      const session = await createSession(t, KEYS.memberA1);
      const owner = await insertRun(t, session);
      const stale = (await runs.findById(owner.runId)) as Run;
      const fresh = (await runs.findById(owner.runId)) as Run;
      fresh.decide({ type: 'cancel_requested', requested_by: 'test' }, testEnv());
      await persistence.save(fresh);
      const before = await sessionState(session.id);

      const id = newId('msg');
      stale.decide({ type: 'tick' }, testEnv({ ids: [id] }));
      await expect(persistence.saveWithMessage(stale, { kind: 'append', message: newMessage(owner, id) })).rejects.toBeInstanceOf(ConcurrencyConflict);
      expect(await messageRow(id)).toBeNull();
      expect(await sessionState(session.id)).toEqual(before);

      // Same for an update, and for a save without events (on a run of its own: this one is cancelling).
      const other = await insertRun(t, session);
      const existing = newId('msg');
      const current = (await runs.findById(other.runId)) as Run;
      current.decide({ type: 'tick' }, testEnv({ ids: [existing] }));
      await persistence.saveWithMessage(current, { kind: 'append', message: newMessage(other, existing) });
      const stale2 = (await runs.findById(other.runId)) as Run;
      current.streamDelta(existing, 'a');
      await persistence.saveWithMessage(current, { kind: 'update', id: existing, changes: { content: [{ type: 'text', text: 'a' }] } });
      stale2.streamDelta(existing, 'b');
      await expect(persistence.saveWithMessage(stale2, { kind: 'update', id: existing, changes: { content: [{ type: 'text', text: 'b' }] } })).rejects.toBeInstanceOf(
        ConcurrencyConflict,
      );
      const stale3 = (await runs.findById(other.runId)) as Run;
      const winner = (await runs.findById(other.runId)) as Run;
      winner.streamDelta(existing, 'c');
      await persistence.save(winner);
      stale3.decide({ type: 'input_steered', inputs: [steered(newId('msg'))] }, testEnv()); // a change without events
      await expect(persistence.saveWithMessage(stale3, { kind: 'update', id: existing, changes: { content: [{ type: 'text', text: 'z' }] } })).rejects.toBeInstanceOf(
        ConcurrencyConflict,
      );
      expect(await messageRow(existing)).toMatchObject({ content: [{ type: 'text', text: 'a' }] });
      expect(await eventTypes(owner.runId)).toEqual(['run.cancel_requested']);
      expect(await eventTypes(other.runId)).toEqual(['message.started', 'message.delta', 'message.delta']);
    });

    it('applies a change without events together with its message write', async () => {
      const session = await createSession(t, KEYS.memberA1);
      const owner = await insertRun(t, session);
      const id = newId('msg');
      const run = (await runs.findById(owner.runId)) as Run;
      run.decide({ type: 'tick' }, testEnv({ ids: [id] }));
      await persistence.saveWithMessage(run, { kind: 'append', message: newMessage(owner, id) });
      run.decide({ type: 'input_steered', inputs: [steered(newId('msg'))] }, testEnv()); // no public event
      await persistence.saveWithMessage(run, { kind: 'update', id, changes: { status: 'failed' } });
      expect(await messageRow(id)).toMatchObject({ status: 'failed' });
    });
  });

  /** RunRepository.insertWithInput: input, run and active run in one statement. */
  describe('insertWithInput', () => {
    function queuedRun(session: { id: string; tenantId: string; subjectId: string }): Run {
      return Run.create({
        id: newId('run'),
        tenantId: session.tenantId,
        subjectId: session.subjectId,
        sessionId: session.id,
        agent: { id: 'support_agent', version: '1' },
        model: 'scripted',
        userMessageId: newId('msg'),
        limits: { max_steps: 10, timeout_ms: 300_000, max_total_tokens: null, max_tool_calls: 50, max_cost: null, max_subagent_depth: 3, max_subagents_per_run: 20 },
        metadata: {},
        now: new Date(),
        queueTtlMs: 3_600_000,
      });
    }
    /** What CreateRunHandler writes: the run's input message, the run, the session's active run. */
    function submit(run: Run, options: { reject?: boolean; expectedRevision?: number } = {}): Promise<void> {
      const s = run.snapshot();
      return uow.batch(async () => {
        const now = new Date();
        const input = { id: s.userMessageId, tenantId: s.tenantId, subjectId: s.subjectId, sessionId: s.sessionId, runId: s.id, role: 'user' as const, status: 'completed' as const, content: [{ type: 'text' as const, text: 'hi' }], metadata: {} };
        await runs.insertWithInput(run, { message: input, now, expectedRevision: options.expectedRevision, concurrency: options.reject ? 'reject' : 'enqueue', receiptId: newId('inp') });
      });
    }
    async function sessionRow(sessionId: string): Promise<{ active_run_id: string | null; revision: number; message_seq: number }> {
      const [row] = await uow.manager.query(`SELECT active_run_id, revision, message_seq FROM sessions WHERE id = $1`, [sessionId]);
      return row;
    }
    async function exists(table: 'runs' | 'messages', id: string): Promise<boolean> {
      return (await uow.manager.query(`SELECT 1 FROM ${table} WHERE id = $1`, [id])).length === 1;
    }

    it('makes the first run active and keeps it active behind later ones; each input takes the next message slot', async () => {
      const session = await createSession(t, KEYS.memberA1);
      const before = await sessionRow(session.id);
      const first = queuedRun(session);
      await submit(first);
      expect(await sessionRow(session.id)).toMatchObject({ active_run_id: first.id, revision: before.revision + 1, message_seq: before.message_seq + 1 });
      const second = queuedRun(session);
      await submit(second, { expectedRevision: before.revision + 1 });
      expect(await sessionRow(session.id)).toMatchObject({ active_run_id: first.id, revision: before.revision + 2, message_seq: before.message_seq + 2 });
      expect((await runs.findById(second.id))!.snapshot()).toMatchObject({ status: 'queued', sessionId: session.id });
      expect(await exists('messages', second.snapshot().userMessageId)).toBe(true);
    });

    it('with reject, a session that has an active run takes neither the input nor the run: 409 session_busy', async () => {
      const session = await createSession(t, KEYS.memberA1);
      const first = queuedRun(session);
      await submit(first, { reject: true }); // no active run yet: accepted
      const before = await sessionRow(session.id);
      const second = queuedRun(session);
      const err = await submit(second, { reject: true }).catch((e) => e);
      expect(err).toMatchObject({ code: 'session_busy', details: { session_id: session.id, active_run_id: first.id } });
      expect(await exists('runs', second.id)).toBe(false);
      expect(await exists('messages', second.snapshot().userMessageId)).toBe(false);
      expect(await sessionRow(session.id)).toEqual(before);
    });

    it('a stale expected revision writes nothing: 409 session_conflict with the current revision', async () => {
      const session = await createSession(t, KEYS.memberA1);
      const before = await sessionRow(session.id);
      const run = queuedRun(session);
      const err = await submit(run, { expectedRevision: before.revision + 5 }).catch((e) => e);
      expect(err).toMatchObject({ code: 'session_conflict', details: { current_revision: before.revision, expected_revision: before.revision + 5 } });
      expect(await exists('runs', run.id)).toBe(false);
      expect(await sessionRow(session.id)).toEqual(before);
    });

    it('concurrent submissions on one session each take their own slot and leave the first one active', async () => {
      const session = await createSession(t, KEYS.memberA1);
      const before = await sessionRow(session.id);
      const batch = Array.from({ length: 6 }, () => queuedRun(session));
      await Promise.all(batch.map((r) => submit(r)));
      const after = await sessionRow(session.id);
      expect(after.message_seq).toBe(before.message_seq + 6);
      // Active: the run whose statement took the session row first (its input has the first slot).
      const [firstInput] = await uow.manager.query(`SELECT run_id FROM messages WHERE session_id = $1 AND role = 'user' ORDER BY sequence LIMIT 1`, [session.id]);
      expect(batch.map((r) => r.id)).toContain(firstInput.run_id);
      expect(after.active_run_id).toBe(firstInput.run_id);
    });

    it('lockSessionOf tells an ending run whether another run of its session is active', async () => {
      const session = await createSession(t, KEYS.memberA1);
      const first = queuedRun(session);
      await submit(first);
      await expect(uow.run(() => runs.lockSessionOf(first))).resolves.toEqual({ othersActive: false, inbox: [] });
      const second = queuedRun(session);
      await submit(second);
      await expect(uow.run(() => runs.lockSessionOf(first))).resolves.toEqual({ othersActive: true, inbox: [] });
      await uow.manager.query(`UPDATE runs SET status = 'cancelled' WHERE id = $1`, [second.id]);
      await expect(uow.run(() => runs.lockSessionOf(first))).resolves.toEqual({ othersActive: false, inbox: [] });
    });

    /** The run as stored, with a cancel decided (a queued run: cancelled at once), not yet saved. */
    async function cancelled(runId: string): Promise<Run> {
      const run = (await runs.findById(runId)) as Run;
      run.decide({ type: 'cancel_requested', requested_by: 'test' }, testEnv());
      return run;
    }

    /** The run row's status and version, and how many events it has. */
    async function runState(runId: string): Promise<{ status: string; version: number; events: number }> {
      const [row] = await uow.manager.query(`SELECT status, version, (SELECT count(*) FROM run_events WHERE run_id = $1)::int AS events FROM runs WHERE id = $1`, [runId]);
      return { status: row.status, version: Number(row.version), events: Number(row.events) };
    }

    it('saveEnding: one statement ends a run and moves the session to its next run; nothing is written while the run holds an input it did not take', async () => {
      const session = await createSession(t, KEYS.memberA1);
      const first = queuedRun(session);
      const second = queuedRun(session);
      await submit(first);
      await submit(second);
      // An input steered to `first` that it has not taken: the locking way must decide (a follow-up run).
      await uow.manager.query(`UPDATE runs SET inbox = jsonb_build_array($2::jsonb) WHERE id = $1`, [first.id, JSON.stringify(steered(newId('msg')))]);
      const before = await runState(first.id);
      const a = await cancelled(first.id);
      await expect(runs.saveEnding(a, { settleSession: new Date() })).resolves.toBeNull();
      expect(await runState(first.id)).toEqual(before);
      expect((await sessionRow(session.id)).active_run_id).toBe(first.id);
      // Without it: ended in one statement, the session moved to `second`, which is active.
      await uow.manager.query(`UPDATE runs SET inbox = '[]'::jsonb WHERE id = $1`, [first.id]);
      const a2 = await cancelled(first.id);
      await expect(runs.saveEnding(a2, { settleSession: new Date() })).resolves.toEqual({ othersActive: true });
      expect(await runState(first.id)).toMatchObject({ status: 'cancelled', version: before.version + 1 });
      expect((await runState(first.id)).events).toBeGreaterThan(before.events);
      expect((await sessionRow(session.id)).active_run_id).toBe(second.id);
      // A stale version: nothing written, null (the locking way then reports the conflict).
      await expect(runs.saveEnding(a, { settleSession: new Date() })).resolves.toBeNull();
      const b = await cancelled(second.id);
      await expect(runs.saveEnding(b, { settleSession: new Date() })).resolves.toEqual({ othersActive: false });
      expect((await sessionRow(session.id)).active_run_id).toBeNull();
    });

    // Two connections at once: PostgreSQL only (the embedded database serves one at a time).
    if (process.env.DATABASE_URL) {
      it('saveEnding writes nothing when the session row changed after its snapshot (a run added while it waited for the lock): the locking way then sees that run', async () => {
        const session = await createSession(t, KEYS.memberA1);
        const first = queuedRun(session);
        await submit(first);
        const before = await runState(first.id);
        const a = await cancelled(first.id);
        // Another transaction holds the session row and adds a queued run to the session (a copy
        // of `first`'s row under a new id), as a run's creation does.
        const db = t.app.get(DataSource);
        const other = db.createQueryRunner();
        await other.connect();
        const added = newId('run');
        try {
          await other.startTransaction();
          await other.query(`UPDATE sessions SET revision = revision + 1 WHERE id = $1`, [session.id]);
          const ending = runs.saveEnding(a, { settleSession: new Date() });
          // The ending statement has taken its snapshot and waits for the session row.
          for (let i = 0; ; i++) {
            const waiting = await db.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'WITH guard AS (UPDATE runs%'`);
            if (waiting.length > 0) break;
            if (i > 200) throw new Error('the ending statement never waited for the session row');
            await new Promise((r) => setTimeout(r, 10));
          }
          await other.query(
            `INSERT INTO runs (id, tenant_id, subject_id, session_id, agent_id, agent_version, model, status, user_message_id, usage, limits, metadata, state, inbox, version, created_at, updated_at, queue_expires_at)
             SELECT $2, tenant_id, subject_id, session_id, agent_id, agent_version, model, 'queued', $3, usage, limits, metadata, state, inbox, 1, created_at + interval '1 millisecond', updated_at, queue_expires_at FROM runs WHERE id = $1`,
            [first.id, added, newId('msg')],
          );
          await other.commitTransaction();
          await expect(ending).resolves.toBeNull();
        } finally {
          await other.release();
        }
        expect(await runState(first.id)).toEqual(before);
        // The locking way: the session's next run is the one added meanwhile.
        await persistence.save(a);
        expect(await runState(first.id)).toMatchObject({ status: 'cancelled' });
        expect((await sessionRow(session.id)).active_run_id).toBe(added);
      });
    }

    it('moves the session to its next active run when a run ends (RunPersistence), and to none after the last', async () => {
      const session = await createSession(t, KEYS.memberA1);
      const first = queuedRun(session);
      const second = queuedRun(session);
      await submit(first);
      await submit(second);
      const a = await cancelled(first.id); // queued: cancelled at once
      await persistence.save(a);
      expect((await sessionRow(session.id)).active_run_id).toBe(second.id);
      const b = await cancelled(second.id);
      await persistence.save(b);
      expect((await sessionRow(session.id)).active_run_id).toBeNull();
      expect((await runs.findById(second.id))!.snapshot().status).toBe('cancelled');
    });
  });
});
