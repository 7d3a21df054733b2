import { Injectable } from '@nestjs/common';
import { toJsonb } from '../../../common/database/jsonb';
import { queryRows } from '../../../common/database/sql';
import { GuardedRider, guardedStatement, StatementParams, StatementPart } from '../../../common/database/statement';
import { EntitySql } from '../../../common/database/entity-sql';
import { UnitOfWork, uowAbortReason } from '../../../common/database/unit-of-work';
import { MessageStatementParts, SessionRowChange } from '../../sessions/infrastructure/message-statement-parts';
import { SessionRepository } from '../../sessions/domain/session.repository';
import { ConcurrencyConflict, DomainError } from '../../../common/errors/domain-error';
import { invalidCursor, keysetPage, SortOrder } from '../../../common/http/pagination';
import { EventAppendParts } from '../../events/infrastructure/event-append-parts';
import { IntegrationEventOutbox } from '../../../common/outbox/integration-events';
import { ModelCallSpend } from '../../usage/domain/spend';
import { SpendRider } from '../../usage/domain/spend-rider';
import { runIntegrationEvents } from '../domain/run-integration-events';
import { Run, SteeredInput } from '../domain/run.aggregate';
import { DueRun, RunInputCommit, RunReadView, RunRepository, SessionAwaitsInput, SessionDefaultConcurrency, SteerReceipt, StepCommit } from '../domain/run.repository';
import type { MessageWrite } from '../../sessions/domain/message';
import { InputDisposition, InputReceipt } from '../domain/input-receipt';
import { isWaiting, TERMINAL_STATUSES } from '../domain/run-status';
import { admit } from '../domain/run-decider';
import { runRowToProps, runToDomain, runToRow } from './run.mapper';
import { RunOrmEntity } from './run.orm-entity';

const TERMINAL_SQL = TERMINAL_STATUSES.map((s) => `'${s}'`).join(',');

/**
 * The session's first active run (FIFO: the one that runs or runs next), as a SELECT of its id;
 * `session` and `except` are SQL placeholders (`except`: a run to leave out, one that is ending).
 */
function firstActiveRunSql(session: string, except?: string): string {
  return `SELECT id FROM runs WHERE session_id = ${session}${except ? ` AND id <> ${except}` : ''} AND status NOT IN (${TERMINAL_SQL}) ORDER BY created_at, id LIMIT 1`;
}

interface RunColumn {
  property: keyof RunOrmEntity;
  column: string;
  json: boolean;
  updatable: boolean;
  lease: boolean;
}
/** Set at insert and never changed by a save (the inbox only loses what the run took: see save). */
const NOT_UPDATED = new Set(['id', 'tenantId', 'subjectId', 'sessionId', 'createdAt', 'inbox']);

/** `uow_abort` reason of an ending save whose session row changed after its snapshot. */
const SESSION_MOVED = 'session_moved';

@Injectable()
export class RunTypeormRepository extends RunRepository {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly eventParts: EventAppendParts,
    private readonly messageParts: MessageStatementParts,
    private readonly sessions: SessionRepository,
    private readonly outbox: IntegrationEventOutbox,
    private readonly spend: SpendRider,
  ) {
    super();
    this.entitySql = new EntitySql(uow.dataSource, RunOrmEntity);
  }

  private readonly entitySql: EntitySql<RunOrmEntity>;

  private get repo() {
    return this.uow.manager.getRepository(RunOrmEntity);
  }

  async insertWithInput(run: Run, input: RunInputCommit): Promise<void> {
    if (run.unsavedEvents.length > 0) throw new Error('a new run has no events to write');
    const insert = this.entitySql.insertPart('runs', runToRow(run) as Partial<RunOrmEntity>);
    const sessionId = run.owner.sessionId;
    const mode = input.concurrency;
    const activation: SessionRowChange = {
      // Old values of the locked row: the run that is active stays so, else this one is. Without
      // `enqueue` (the caller holds the session lock and queues it behind whatever is active) the
      // condition is an idle session: the run starts, so its receipt says `started` for certain.
      render: (p) => {
        const [runId, now] = p.add(run.id, input.now);
        const set = `active_run_id = COALESCE(active_run_id, ${runId}), last_active_at = ${now}`;
        if (mode === 'enqueue') return { set };
        return { set, where: `active_run_id IS NULL` };
      },
      fail: async () => {
        const session = (await this.sessions.findById(sessionId))?.snapshot();
        if (!session) return null;
        const active = session.activeRunId;
        // Busy when the statement ran, idle now (its run ended in between): decide again, locked.
        if (active === null) return new SessionDefaultConcurrency(mode ?? session.defaultConcurrency);
        // An active run waiting for input takes the input as its answer (CONTRACT 17), in any mode.
        const rows = await queryRows<{ status: string }>(this.uow.manager, `SELECT status FROM runs WHERE id = $1`, [active]);
        if (rows[0]?.status === 'waiting_for_input') return new SessionAwaitsInput(active);
        // A busy session: what `admit` says for it. Anything but reject takes the session lock first.
        const admission = admit(mode, { hasActiveRun: true, defaultConcurrency: session.defaultConcurrency });
        if (admission === 'steer' || admission === 'interrupt') return new SessionDefaultConcurrency(admission);
        if (admission === 'queue') return new SessionDefaultConcurrency('enqueue');
        if (admission === 'reject') return new DomainError('session_busy', 'the session already has an active run', { session_id: sessionId, active_run_id: active });
        return null;
      },
    };
    this.uow.afterCommit(() => run.markSaved());
    // The input's receipt in the same statement: `started` when this run is the session's active
    // run after the append, `queued` when it waits behind another (read from the locked row).
    const receipt: StatementPart = (p) => {
      const [rid, tenant, subject, session, message, runId, now] = p.add(input.receiptId, run.owner.tenantId, run.owner.subjectId, sessionId, input.message.id, run.id, input.now);
      return `input_insert AS (INSERT INTO inputs (id, tenant_id, subject_id, session_id, message_id, disposition, run_id, created_at)
        SELECT ${rid}, ${tenant}, ${subject}, ${session}, ${message}, CASE WHEN a.active_run_id = ${runId} THEN 'started' ELSE 'queued' END, ${runId}, ${now}
          FROM (${this.messageParts.activeRunAfterAppend()}) a)`;
    };
    await this.uow.write(
      this.messageParts.appendWrite(input.message, { expectedRevision: input.expectedRevision, now: input.now, session: activation, refuseArchived: true }),
      { ctes: (p) => `run_insert AS (${insert(p)}), ${receipt(p)}` },
    );
  }

  async save(run: Run, commit: StepCommit = {}): Promise<void> {
    await this.write(run, commit, false);
  }

  async saveEnding(run: Run, commit: { message?: MessageWrite; settleSession: Date }): Promise<{ othersActive: boolean } | null> {
    try {
      const next = await this.write(run, commit, true);
      return { othersActive: next != null };
    } catch (err) {
      // Nothing was written (one statement): the caller takes the locking way, which decides.
      if (err instanceof ConcurrencyConflict || uowAbortReason(err) === SESSION_MOVED) return null;
      throw err;
    }
  }

  /**
   * The run's versioned UPDATE with the step's other writes riding on it, as one statement.
   * `ending` (saveEnding): the statement locks the session row first (its InitPlan), matches only
   * while the run holds no steered input it did not take, and moves the session's `active_run_id`
   * only if the session row is the version its snapshot sees (else it raises `session_moved`);
   * it returns the session's next active run.
   */
  private async write(run: Run, commit: StepCommit, ending: boolean): Promise<string | null | undefined> {
    if (!run.hasChanges) {
      if (commit.message || commit.settleSession) throw new Error('a run save with other writes needs changes to the run');
      return;
    }
    const events = [...run.unsavedEvents];
    const row = runToRow(run);
    // The lease columns belong to the claim and the heartbeat; a save only clears them, when the
    // run stops executing (it waits or ended).
    const releases = run.isTerminal || isWaiting(run.status);
    const columns = this.columns().filter((c) => c.updatable && (releases || !c.lease));
    // Steered inputs the run took leave its inbox; those steered meanwhile stay (no version change).
    const taken = [...run.takenInputs];
    // Moves into a notified status (terminal, or waiting for a human) publish integration events.
    const statusChanges = run.unsavedStatusChanges.length;
    const published = statusChanges > 0 ? runIntegrationEvents(run.propsForPersistence(), run.unsavedStatusChanges) : [];
    // A message append takes the session's next slot: the session row is locked before the run row.
    const appends = commit.message?.kind === 'append';
    const lockSession = appends || ending;
    // The guard: the versioned UPDATE. Plain SQL: TypeORM's query builders were ~20% of the CPU
    // of a run read or write (profile).
    const guard: StatementPart = (p) => {
      const [id, version] = p.add(row.id, run.expectedVersion);
      const setters = columns.map((c) => {
        const v = c.lease ? null : row[c.property];
        const [value] = p.add(c.json && v !== null && v !== undefined ? toJsonb(v) : v);
        return `${c.column} = ${value}${c.json ? '::jsonb' : ''}`;
      });
      if (taken.length > 0) {
        const [ids] = p.add(taken);
        setters.push(
          `inbox = (SELECT COALESCE(jsonb_agg(x.e ORDER BY x.o), '[]'::jsonb) FROM jsonb_array_elements(inbox) WITH ORDINALITY x(e, o) WHERE NOT (x.e->>'message_id' = ANY(${ids}::text[])))`,
        );
      }
      // The session row first: the sessions module's lock condition runs before the scan of runs.
      const lock = lockSession ? ` AND ${this.messageParts.sessionLocked(run.owner.sessionId)(p)}` : '';
      // An ending run without a transaction: only while every input in its inbox is one it took
      // (a steer that arrived meanwhile is re-read here: the row is re-checked once locked).
      const alone = ending ? ` AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(inbox) x(e) WHERE NOT (x.e->>'message_id' = ANY(${p.add(taken)[0]}::text[])))` : '';
      return `UPDATE runs SET ${setters.join(', ')} WHERE id = ${id} AND version = ${version}${lock}${alone} RETURNING id`;
    };
    // The session's next active run (this one is ending): in the message append's update of the
    // session row if there is one (a statement cannot update a row twice), else on its own.
    const settle = commit.settleSession ? this.settleChange(run, commit.settleSession, ending) : undefined;
    const riders: GuardedRider[] = [];
    if (commit.message) riders.push(this.messageParts.afterGuard(commit.message, appends ? settle : undefined));
    if (settle && !appends) riders.push(this.messageParts.sessionAfterGuard(run.owner.sessionId, settle));
    if (published.length > 0) riders.push(this.outbox.afterGuard(published));
    // Receipts of the messages a model turn of this run takes now: the steered inputs it took, and
    // its own user message when it starts (its first turn follows in the same execution).
    const props = run.propsForPersistence();
    const revoked = props.error?.code === 'access_revoked';
    const takenMessages = events.some((e) => e.type === 'run.started') && !revoked ? [props.userMessageId, ...taken] : taken;
    if (revoked && statusChanges > 0) {
      // Refused as it was due to start: its input will never be taken.
      riders.push((p, g) => `inputs_rejected AS (UPDATE inputs SET disposition = 'rejected' WHERE message_id = ${p.add(props.userMessageId)[0]} AND taken_at IS NULL AND ${g.matched})`);
    }
    if (takenMessages.length > 0) {
      riders.push((p, g) => {
        const [ids] = p.add(takenMessages);
        return `inputs_taken AS (UPDATE inputs SET taken_at = COALESCE(taken_at, now()) WHERE message_id = ANY(${ids}::text[]) AND ${g.matched})`;
      });
    }
    // The model calls whose turns this step ends: their spend is written by this statement.
    const spent = spendOf(run);
    if (spent.length > 0) riders.push(this.spend.afterGuard(spent));
    // The conditional UPDATE, the other writes and the events in one statement: nothing without the update.
    const tail = events.length > 0 ? this.eventParts.appendAfterGuard(run.owner, events) : undefined;
    const next = ending && settle ? `(${appends ? this.messageParts.activeRunAfterAppend() : this.messageParts.activeRunAfterSessionChange()}) AS next_active_run` : undefined;
    const { sql, params } = guardedStatement({ guard, riders, tail, returning: next });
    const nextActive = await this.uow.statement(async (m) => {
      const rows = await queryRows<{ next_active_run?: string | null }>(m, sql, params);
      const matched = tail ? (await tail.complete(rows)) !== null : rows.length === 1;
      if (!matched) throw new ConcurrencyConflict('run', row.id, run.expectedVersion);
      return rows[0]?.next_active_run;
    });
    run.markSaved(events.length, taken.length, statusChanges, spent.length);
    return nextActive;
  }

  /** An ending run's change to its session row: `active_run_id` to the session's next active run. */
  private settleChange(run: Run, now: Date, fromSnapshot: boolean): SessionRowChange {
    return {
      render: (p) => {
        const [session, ending, at] = p.add(run.owner.sessionId, run.id, now);
        const next = `(${firstActiveRunSql(`${session}::text`, `${ending}::text`)})`;
        // The next run is read from the statement's snapshot: right only if no transaction changed
        // the session row after it (every writer that adds a run to a session updates that row).
        const active = fromSnapshot ? `CASE WHEN ${this.messageParts.sessionRowAsOfSnapshot(run.owner.sessionId)(p)} THEN ${next} ELSE uow_abort('${SESSION_MOVED}')::text END` : next;
        return { set: `last_active_at = ${at}, active_run_id = ${active}` };
      },
    };
  }

  async lockSessionOf(run: Run): Promise<{ othersActive: boolean; inbox: SteeredInput[] }> {
    // Session row, then run row (the order of every writer that takes both): the sessions
    // module's lock condition runs once, before the scan of runs, whose row is locked after it
    // (FOR NO KEY UPDATE, as an UPDATE of it would: foreign-key checks on it are not blocked).
    // A locked row is read as last committed, so the inbox includes every steer that held the
    // session lock before us.
    const p = new StatementParams();
    const [session, id] = p.add(run.owner.sessionId, run.id);
    const locked = this.messageParts.sessionLocked(run.owner.sessionId)(p);
    const rows = await queryRows<{ others: boolean; inbox: SteeredInput[] }>(
      this.uow.manager,
      `SELECT EXISTS (${firstActiveRunSql(session, id)}) AS others, r.inbox FROM runs r WHERE r.id = ${id} AND ${locked} FOR NO KEY UPDATE OF r`,
      p.values,
    );
    return { othersActive: rows[0]?.others === true, inbox: rows[0]?.inbox ?? [] };
  }

  async inboxOf(runId: string): Promise<SteeredInput[]> {
    const rows = await queryRows<{ inbox: SteeredInput[] }>(this.uow.manager, `SELECT inbox FROM runs WHERE id = $1`, [runId]);
    return rows[0]?.inbox ?? [];
  }

  async steer(runId: string, input: SteeredInput, receipt: SteerReceipt): Promise<boolean> {
    // The inbox append and the receipt: one statement (the receipt only when the run took it).
    const rows = await queryRows<{ id: string }>(
      this.uow.manager,
      `WITH steered AS (UPDATE runs SET inbox = inbox || jsonb_build_array($2::jsonb) WHERE id = $1 AND status NOT IN (${TERMINAL_SQL}) RETURNING id)
       INSERT INTO inputs (id, tenant_id, subject_id, session_id, message_id, disposition, run_id, created_at)
       SELECT $3, $4, $5, $6, $7, 'steered', steered.id, $8 FROM steered RETURNING run_id AS id`,
      [runId, JSON.stringify(input), receipt.id, receipt.tenantId, receipt.subjectId, receipt.sessionId, input.message_id, receipt.now],
    );
    return rows.length === 1;
  }

  async answerReceipt(r: InputReceipt): Promise<void> {
    await this.uow.manager.query(
      `INSERT INTO inputs (id, tenant_id, subject_id, session_id, message_id, disposition, run_id, taken_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [r.id, r.tenantId, r.subjectId, r.sessionId, r.messageId, r.disposition, r.runId, r.takenAt, r.createdAt],
    );
  }

  async followUpReceipts(messageIds: readonly string[], runId: string): Promise<void> {
    await this.uow.manager.query(`UPDATE inputs SET disposition = 'followed_up', run_id = $2 WHERE message_id = ANY($1::text[])`, [messageIds, runId]);
  }

  async rejectReceipt(messageId: string): Promise<void> {
    await this.uow.manager.query(`UPDATE inputs SET disposition = 'rejected' WHERE message_id = $1 AND taken_at IS NULL`, [messageId]);
  }

  async findReceipt(id: string): Promise<InputReceipt | null> {
    const rows = await queryRows<{ id: string; tenant_id: string; subject_id: string; session_id: string; message_id: string; disposition: InputDisposition; run_id: string; taken_at: Date | string | null; created_at: Date | string }>(
      this.uow.manager,
      `SELECT id, tenant_id, subject_id, session_id, message_id, disposition, run_id, taken_at, created_at FROM inputs WHERE id = $1`,
      [id],
    );
    const r = rows[0];
    if (!r) return null;
    return {
      id: r.id,
      tenantId: r.tenant_id,
      subjectId: r.subject_id,
      sessionId: r.session_id,
      messageId: r.message_id,
      disposition: r.disposition,
      runId: r.run_id,
      takenAt: r.taken_at === null ? null : new Date(r.taken_at),
      createdAt: new Date(r.created_at),
    };
  }

  async insert(run: Run): Promise<void> {
    const insert = this.entitySql.insertPart('runs', runToRow(run) as Partial<RunOrmEntity>);
    await this.uow.write({ ctes: (p) => `run_insert AS (${insert(p)})` });
    this.uow.afterCommit(() => run.markSaved());
  }

  async clearInbox(runId: string): Promise<void> {
    await this.uow.manager.query(`UPDATE runs SET inbox = '[]'::jsonb WHERE id = $1`, [runId]);
  }

  async lastAgentOf(sessionId: string, before: { runId: string; createdAt: Date }): Promise<{ id: string; version: string } | null> {
    const rows: Array<{ agent_id: string; agent_version: string; current: { id: string; version: string } | null }> = await this.uow.manager.query(
      `SELECT agent_id, agent_version, state->'current_agent' AS current FROM runs
        WHERE session_id = $1 AND id <> $2 AND created_at <= $3 AND started_at IS NOT NULL
        ORDER BY created_at DESC, id DESC LIMIT 1`,
      [sessionId, before.runId, before.createdAt],
    );
    if (!rows.length) return null;
    const r = rows[0];
    return r.current && typeof r.current.id === 'string' ? { id: r.current.id, version: String(r.current.version) } : { id: r.agent_id, version: String(r.agent_version) };
  }

  async findById(id: string): Promise<Run | null> {
    const rows: Array<Record<string, unknown>> = await this.uow.manager.query(`SELECT ${this.selectList()} FROM runs WHERE id = $1`, [id]);
    return rows.length ? runToDomain(this.entitySql.hydrate(rows[0])) : null;
  }

  /**
   * One round trip for GET /v1/runs/{id}: the row and its `event_streams.last_sequence` (0 before
   * the first event), read in one snapshot, as ONE json column: pg's per-column decoding of 27
   * typed columns (row description, per-field parsers, dates) was ~15% of the request's CPU
   * (bench B4, paired A/B); JSON.parse of one text is native. Timestamps come back as ISO 8601 with an offset (exact
   * milliseconds: the columns are timestamptz(3)) and become Dates again. The row maps straight
   * to props: no aggregate, whose restore and snapshot deep-copy it twice.
   */
  async findView(id: string): Promise<RunReadView | null> {
    const rows: Array<{ v: string }> = await this.uow.manager.query(
      `SELECT row_to_json(v)::text AS v FROM (SELECT ${this.selectList()}, es.last_sequence AS "lastSequence", es.purged_through AS "purgedThrough"
         FROM runs LEFT JOIN event_streams es ON es.stream_id = $1 WHERE id = $1) v`,
      [id],
    );
    if (!rows.length) return null;
    const row = JSON.parse(rows[0].v) as Record<string, unknown>;
    for (const p of this.dateProperties()) if (typeof row[p] === 'string') row[p] = new Date(row[p] as string);
    return { run: runRowToProps(row as unknown as RunOrmEntity), lastSequence: Number(row.lastSequence ?? 0), purgedThrough: Number(row.purgedThrough ?? 0) };
  }

  async existing(ids: string[]): Promise<string[]> {
    const rows: Array<{ id: string }> = await this.uow.manager.query(`SELECT id FROM runs WHERE id = ANY($1::text[])`, [ids]);
    return rows.map((r) => r.id);
  }

  private cachedColumns: RunColumn[] | null = null;

  /** The `runs` columns, from the ORM entity's metadata (one source of truth for names and types). */
  private columns(): RunColumn[] {
    this.cachedColumns ??= this.entitySql.columns().map((c) => ({
      ...c,
      updatable: !NOT_UPDATED.has(c.property),
      lease: c.property === 'leaseOwner' || c.property === 'leaseExpiresAt',
    }));
    return this.cachedColumns;
  }

  private cachedDates: string[] | null = null;

  /** Properties of the timestamp columns (a JSON row carries them as strings). */
  private dateProperties(): string[] {
    this.cachedDates ??= this.entitySql
      .columns()
      .filter((c) => c.timestamp)
      .map((c) => c.property);
    return this.cachedDates;
  }

  private selectList(): string {
    return this.entitySql.selectList();
  }

  async findActiveInSession(sessionId: string): Promise<string | null> {
    const rows: Array<{ id: string }> = await this.uow.manager.query(
      firstActiveRunSql('$1'),
      [sessionId],
    );
    return rows[0]?.id ?? null;
  }

  async listBySession(sessionId: string, page: { after?: string; limit: number; order: SortOrder }) {
    const scope = () => this.repo.createQueryBuilder('r').where('r.session_id = :sessionId', { sessionId });
    let cursor: { createdAt: Date; id: string } | null = null;
    if (page.after !== undefined) {
      const row = await scope().andWhere('r.id = :after', { after: page.after }).getOne();
      if (!row) throw invalidCursor(page.after);
      cursor = { createdAt: row.createdAt, id: row.id };
    }
    const { rows, hasMore } = await keysetPage(scope(), 'r', cursor, page.order, page.limit);
    return { items: rows.map(runToDomain), hasMore };
  }

  async claimBatch(nodeId: string, leaseMs: number, limit: number): Promise<Run[]> {
    // One statement: lease up to `limit` claimable runs and return their rows (no read-back).
    const rows = await queryRows<Record<string, unknown> & { createdAt: Date; ownerAccess: boolean }>(
      this.uow.manager,
      `UPDATE runs SET lease_owner = $1, lease_expires_at = now() + ($2 || ' milliseconds')::interval, version = version + 1
        WHERE id IN (
          SELECT r.id FROM runs r
           WHERE (
                   (r.status = 'queued'
                    AND r.queue_expires_at > now()
                    AND NOT EXISTS (SELECT 1 FROM runs e WHERE e.session_id = r.session_id
                                     AND e.status NOT IN (${TERMINAL_SQL})
                                     AND (e.created_at, e.id) < (r.created_at, r.id)))
                   OR (r.status IN ('running', 'cancelling'))
                 )
             AND (r.lease_expires_at IS NULL OR r.lease_expires_at < now())
           ORDER BY r.created_at, r.id
           FOR NO KEY UPDATE SKIP LOCKED
           LIMIT $3)
        RETURNING ${this.selectList()},
          -- Access re-checked as a queued run starts: its owner still has a key (CONTRACT 7).
          (status <> 'queued' OR EXISTS (SELECT 1 FROM api_keys k WHERE k.tenant_id = runs.tenant_id AND k.subject_id = runs.subject_id)) AS "ownerAccess"`,
      [nodeId, String(leaseMs), limit],
    );
    return rows
      .sort((a, b) => new Date(a.createdAt).getTime() - new Date(b.createdAt).getTime())
      .map(({ ownerAccess, ...r }) => {
        const run = runToDomain(this.entitySql.hydrate(r));
        if (ownerAccess === false) run.ownerAccessWasRevoked();
        return run;
      });
  }


  async claimDue(now: Date, leaseMs: number, limit: number): Promise<DueRun[]> {
    // The due time is also the claim's lease: moved on by leaseMs, so another node (or this one
    // after a crash) looks again only then; the decision itself is guarded by the run's version.
    const rows = await queryRows<{ id: string; tenant_id: string; status: string }>(
      this.uow.manager,
      `UPDATE runs SET wake_at = $1::timestamptz + ($2 || ' milliseconds')::interval
        WHERE id IN (SELECT id FROM runs WHERE wake_at IS NOT NULL AND wake_at <= $1 ORDER BY wake_at, id FOR NO KEY UPDATE SKIP LOCKED LIMIT $3)
        RETURNING id, tenant_id, status`,
      [now, String(leaseMs), limit],
    );
    return rows.map((r) => ({ id: r.id, tenantId: r.tenant_id, status: r.status as DueRun['status'] }));
  }

  async orphanedSubagentRuns(limit: number): Promise<Array<{ id: string; parentRunId: string; parentCancelled: boolean }>> {
    // The active runs by runs_active_by_session's predicate (few), each joined to its parent by id.
    const rows = await queryRows<{ id: string; parent_run_id: string; parent_status: string }>(
      this.uow.manager,
      `SELECT c.id, p.id AS parent_run_id, p.status AS parent_status FROM runs c JOIN runs p ON p.id = c.state->'parent'->>'run_id'
        WHERE c.status NOT IN ('completed','failed','cancelled','expired','terminated') AND c.status <> 'cancelling'
          AND p.status IN ('cancelling','cancelled','completed','failed','expired','terminated') LIMIT $1`,
      [limit],
    );
    return rows.map((r) => ({ id: r.id, parentRunId: r.parent_run_id, parentCancelled: r.parent_status === 'cancelling' || r.parent_status === 'cancelled' }));
  }

  async heartbeat(runId: string, nodeId: string, leaseMs: number) {
    const rows = await queryRows<{ status: string; cancel_requested_at: Date | null; inbox_size: number }>(
      this.uow.manager,
      `UPDATE runs SET lease_expires_at = now() + ($3 || ' milliseconds')::interval
        WHERE id = $1 AND lease_owner = $2 RETURNING status, cancel_requested_at, jsonb_array_length(inbox) AS inbox_size`,
      [runId, nodeId, String(leaseMs)],
    );
    if (rows.length === 0) return null;
    return { status: rows[0].status, cancelRequested: rows[0].cancel_requested_at !== null, inboxSize: Number(rows[0].inbox_size) };
  }

  async findExpiredQueued(limit: number, now: Date): Promise<string[]> {
    const rows: Array<{ id: string }> = await this.uow.manager.query(
      `SELECT id FROM runs WHERE status = 'queued' AND queue_expires_at <= $2 ORDER BY created_at LIMIT $1`,
      [limit, now],
    );
    return rows.map((r) => r.id);
  }

  async releaseLeases(nodeId: string): Promise<number> {
    const rows = await queryRows<{ id: string }>(
      this.uow.manager,
      `UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = $1 RETURNING id`,
      [nodeId],
    );
    return rows.length;
  }
}

/** The spend of the model calls whose turns the step ends: one record per call, keyed by its message (usage module, CONTRACT 18). */
function spendOf(run: Run): Array<Omit<ModelCallSpend, 'occurredAt'>> {
  const p = run.propsForPersistence();
  return run.unsavedSpend.map(({ message_id, usage }) => ({
    tenantId: p.tenantId,
    runId: p.id,
    messageId: message_id,
    agentId: p.agent.id,
    model: p.model,
    inputTokens: usage.input_tokens,
    cachedInputTokens: usage.cached_input_tokens,
    outputTokens: usage.output_tokens,
    reasoningTokens: usage.reasoning_tokens ?? 0,
    amount: usage.cost ?? '0',
  }));
}
