import { Injectable, Optional } from '@nestjs/common';
import { jsonbOrdered, toJsonb } from '../../../common/database/jsonb';
import { RecentEvents } from '../application/recent-events';
import { Guard, StatementParams } from '../../../common/database/statement';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { EventAppendParts, GuardedEventAppend } from './event-append-parts';
import { Metrics } from '../../../common/metrics/metrics';
import { newId } from '../../../common/ids/ids';
import { EventStreamState, EventStreams, PartitionDropResult, PurgeResult } from '../domain/event-streams';
import { Notifier } from '../domain/notifier';
import { EventStore, EventStreamOwner, NewRunEvent, RunEventType, StoredRunEvent } from '../domain/run-event';

interface EventRow {
  id: string;
  tenant_id: string;
  subject_id: string;
  session_id: string;
  run_id: string;
  sequence: number | string;
  session_sequence: number | string;
  type: string;
  data: Record<string, unknown>;
  occurred_at: Date | string;
}

const COLUMNS = 'id, tenant_id, subject_id, session_id, run_id, sequence, session_sequence, type, data, occurred_at';

function toStored(r: EventRow): StoredRunEvent {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    subjectId: r.subject_id,
    sessionId: r.session_id,
    runId: r.run_id,
    sequence: Number(r.sequence),
    sessionSequence: Number(r.session_sequence),
    type: r.type as RunEventType,
    occurredAt: r.occurred_at instanceof Date ? r.occurred_at : new Date(r.occurred_at),
    data: r.data,
  };
}

/** TypeORM's `query` answers `[rows, count]` for UPDATE/DELETE and `rows` otherwise. */
function rowsOf<T>(raw: unknown): T[] {
  if (Array.isArray(raw) && raw.length === 2 && Array.isArray(raw[0]) && typeof raw[1] === 'number') return raw[0] as T[];
  return raw as T[];
}

/**
 * The event store on PostgreSQL (or the embedded PGlite). `append` joins the caller's transaction
 * (or opens one): it takes the session counter row lock, then the run counter row lock (always in
 * this order, so concurrent writers cannot deadlock), assigns gap-free sequences, inserts all rows
 * in one statement and announces the commit through the `Notifier` (in that same statement when
 * the notifier is PostgreSQL's LISTEN/NOTIFY).
 */
@Injectable()
export class TypeormEventStore extends EventStore implements EventStreams, EventAppendParts {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly notifier: Notifier,
    @Optional() private readonly metrics?: Metrics,
    @Optional() private readonly recent?: RecentEvents,
  ) {
    super();
  }

  async append(owner: EventStreamOwner, events: NewRunEvent[]): Promise<StoredRunEvent[]> {
    if (events.length === 0) return [];
    // One statement: no transaction of its own (it joins the caller's, if any).
    return this.uow.statement(async (m) => {
      const part = this.appendPart(owner, events, false);
      const params = new StatementParams();
      const { ctes, select } = part.render(params, null);
      return (await part.complete(rowsOf(await m.query(`WITH ${ctes.join(', ')}${select}`, params.values))))!;
    });
  }

  appendAfterGuard(owner: EventStreamOwner, events: NewRunEvent[]): GuardedEventAppend {
    if (events.length === 0) throw new Error('a guarded append needs events');
    return this.appendPart(owner, events, true);
  }

  /**
   * One statement (one round trip): bump the session counter, then the run counter (rows are
   * locked in VALUES order, always session first, so concurrent writers cannot deadlock; missing
   * counter rows are created), and insert the rows with the sequences just taken. The run_events
   * trigger queues their audit records; the notifier is told after the commit (`announce`). After a guard (`guarded`), without
   * a row from it nothing is bumped or inserted, and the final SELECT returns no row.
   */
  private appendPart(
    owner: EventStreamOwner,
    events: NewRunEvent[],
    guarded: boolean,
  ): { render(p: StatementParams, guard: Guard | null): { ctes: string[]; select: string }; complete: GuardedEventAppend['complete'] } {
    const n = events.length;
    const ids = events.map(() => newId('evt'));
    const occurredAt = new Date();
    const payloads = events.map((e) => toJsonb(e.data ?? {}));
    // This node's streams of the run or session get the committed rows from the writer (below),
    // and its hub then skips the notification (marked with the origin).
    const handOver = this.recent?.wants(owner.runId, owner.sessionId) ? this.recent : undefined;
    const render = (p: StatementParams, guard: Guard | null) => {
      if (guarded !== (guard !== null)) throw new Error('an event append part rendered with the wrong guard');
      const [session, run, count, tenant, subject, at, idList, types, data] = p.add(
        owner.sessionId,
        owner.runId,
        n,
        owner.tenantId,
        owner.subjectId,
        occurredAt,
        ids,
        events.map((e) => e.type),
        payloads,
      );
      const bump = guard
        ? `bump AS (
             INSERT INTO event_streams (stream_id, last_sequence)
             SELECT v.stream_id, ${count}::bigint FROM (VALUES (1, ${session}::text), (2, ${run}::text)) v(ord, stream_id)
              WHERE ${guard.matched} ORDER BY v.ord
             ON CONFLICT (stream_id) DO UPDATE SET last_sequence = event_streams.last_sequence + EXCLUDED.last_sequence
             RETURNING stream_id, last_sequence
           )`
        : `bump AS (
             INSERT INTO event_streams (stream_id, last_sequence) VALUES (${session}, ${count}), (${run}, ${count})
             ON CONFLICT (stream_id) DO UPDATE SET last_sequence = event_streams.last_sequence + EXCLUDED.last_sequence
             RETURNING stream_id, last_sequence
           )`;
      const ins = `ins AS (
             INSERT INTO run_events (${COLUMNS})
             SELECT u.id, ${tenant}::text, ${subject}::text, ${session}, ${run}, r.last_sequence - ${count} + u.n, s.last_sequence - ${count} + u.n, u.type, u.data, ${at}::timestamptz
               FROM unnest(${idList}::text[], ${types}::text[], ${data}::jsonb[]) WITH ORDINALITY AS u(id, type, data, n),
                    (SELECT last_sequence FROM bump WHERE stream_id = ${session}) s,
                    (SELECT last_sequence FROM bump WHERE stream_id = ${run}) r
           )`;
      const select = `
           SELECT s.last_sequence AS last_session_sequence, r.last_sequence
             FROM (SELECT last_sequence FROM bump WHERE stream_id = ${session}) s, (SELECT last_sequence FROM bump WHERE stream_id = ${run}) r`;
      return { ctes: [bump, ins], select };
    };
    const complete = async (raw: Array<Record<string, unknown>>): Promise<StoredRunEvent[] | null> => {
      const rows = raw as Array<{ last_session_sequence: string | number; last_sequence: string | number }>;
      if (rows.length === 0) return null; // the guard returned no row: nothing was written
      const lastSessionSequence = Number(rows[0].last_session_sequence);
      const lastSequence = Number(rows[0].last_sequence);
      const firstSession = lastSessionSequence - n + 1;
      const first = lastSequence - n + 1;
      const stored: StoredRunEvent[] = events.map((e, i) => ({
        id: ids[i],
        tenantId: owner.tenantId,
        subjectId: owner.subjectId,
        sessionId: owner.sessionId,
        runId: owner.runId,
        sequence: first + i,
        sessionSequence: firstSession + i,
        type: e.type,
        occurredAt,
        data: e.data ?? {},
      }));
      if (handOver) {
        // This node's streams of the run or session get the committed rows without reading them
        // back: copies as a database read would return them (jsonb's key order).
        const recent = handOver;
        const copies = stored.map((e, i) => ({ ...e, occurredAt: new Date(occurredAt.getTime()), data: jsonbOrdered(JSON.parse(payloads[i])) as Record<string, unknown> }));
        this.uow.afterCommit(() => recent.add(copies));
      }
      await this.notifier.announce({ sessionId: owner.sessionId, runId: owner.runId, lastSequence, lastSessionSequence, ...(handOver ? { origin: handOver.origin } : {}) });
      if (this.metrics) this.uow.afterCommit(() => this.metrics?.recordEventsAppended(events.map((e) => e.type)));
      return stored;
    };
    return { render, complete };
  }

  async readRun(runId: string, afterSequence: number, limit: number): Promise<StoredRunEvent[]> {
    const rows: EventRow[] = await this.uow.manager.query(
      // A function planned once per connection (migration 1764498800000: a prepared statement was
      // re-planned over every partition on each read of a long run).
      `SELECT ${COLUMNS} FROM run_events_page($1, $2, $3) ORDER BY sequence`,
      [runId, afterSequence, limit],
    );
    return rows.map(toStored);
  }

  async readSession(sessionId: string, afterSessionSequence: number, limit: number): Promise<StoredRunEvent[]> {
    const rows: EventRow[] = await this.uow.manager.query(
      `SELECT ${COLUMNS} FROM session_events_page($1, $2, $3) ORDER BY session_sequence`,
      [sessionId, afterSessionSequence, limit],
    );
    return rows.map(toStored);
  }

  async lastSequence(runId: string): Promise<number> {
    return (await this.state(runId)).lastSequence;
  }

  override async lastSequences(runIds: string[]): Promise<Map<string, number>> {
    const out = new Map(runIds.map((id) => [id, 0]));
    if (runIds.length === 0) return out;
    const rows: Array<{ stream_id: string; last_sequence: string }> = await this.uow.manager.query(
      `SELECT stream_id, last_sequence FROM event_streams WHERE stream_id = ANY($1::text[])`,
      [runIds],
    );
    for (const r of rows) out.set(r.stream_id, Number(r.last_sequence));
    return out;
  }

  async state(streamId: string): Promise<EventStreamState> {
    const rows: Array<{ last_sequence: string; purged_through: string }> = await this.uow.manager.query(
      `SELECT last_sequence, purged_through FROM event_streams WHERE stream_id = $1`,
      [streamId],
    );
    if (rows.length === 0) return { lastSequence: 0, purgedThrough: 0 };
    return { lastSequence: Number(rows[0].last_sequence), purgedThrough: Number(rows[0].purged_through) };
  }

  async ensurePartitions(widthDays: number, until: Date): Promise<number> {
    const rows: Array<{ n: number }> = await this.uow.manager.query(`SELECT run_events_create_partitions($1, $2) AS n`, [widthDays, until]);
    return Number(rows[0]?.n ?? 0);
  }

  async dropExpiredPartitions(cutoff: Date): Promise<PartitionDropResult> {
    const parts: Array<{ name: string }> = await this.uow.manager.query(
      `SELECT name FROM run_events_partition_bounds() WHERE upper <= $1 ORDER BY upper`,
      [cutoff],
    );
    const out: PartitionDropResult = { partitions: 0, events: 0, postponed: 0 };
    for (const { name } of parts) {
      // One transaction per partition (the function's): its streams' purged_through and the drop commit together.
      const rows: Array<{ n: string | null }> = await this.uow.manager.query(`SELECT run_events_drop_partition($1, $2) AS n`, [name, cutoff]);
      if (rows[0]?.n === null || rows[0]?.n === undefined) out.postponed++;
      else {
        out.partitions++;
        out.events += Number(rows[0].n);
      }
    }
    return out;
  }

  async purgeFinishedRuns(cutoff: Date, maxRuns: number): Promise<PurgeResult> {
    // Only the default partition (rows no time partition took, e.g. written before the service
    // created one): every other partition goes whole (dropExpiredPartitions).
    const runs: Array<{ run_id: string }> = await this.uow.manager.query(
      `SELECT run_id FROM run_events_default WHERE type = 'run.finished' AND occurred_at < $1 ORDER BY occurred_at ASC LIMIT $2`,
      [cutoff, maxRuns],
    );
    let events = 0;
    for (const { run_id: runId } of runs) {
      events += await this.uow.run(async (m) => {
        const deleted = rowsOf<{ session_id: string; seq: string; sseq: string; n: string }>(
          await m.query(
            `WITH d AS (DELETE FROM run_events_default WHERE run_id = $1 RETURNING session_id, sequence, session_sequence)
             SELECT session_id, max(sequence) AS seq, max(session_sequence) AS sseq, count(*) AS n FROM d GROUP BY session_id`,
            [runId],
          ),
        );
        let count = 0;
        for (const d of deleted) {
          // Same lock order as append: session row first, then run row.
          await m.query(`UPDATE event_streams SET purged_through = GREATEST(purged_through, $2) WHERE stream_id = $1`, [d.session_id, d.sseq]);
          await m.query(`UPDATE event_streams SET purged_through = GREATEST(purged_through, $2) WHERE stream_id = $1`, [runId, d.seq]);
          count += Number(d.n);
        }
        return count;
      });
    }
    return { runs: runs.length, events };
  }
}
