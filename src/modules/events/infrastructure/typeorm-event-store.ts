import { Injectable, Optional } from '@nestjs/common';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { Metrics } from '../../../common/metrics/metrics';
import { newId } from '../../../common/ids/ids';
import { EventStreamState, EventStreams, PurgeResult } from '../domain/event-streams';
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
 * in one statement and announces the commit through the `Notifier`.
 */
@Injectable()
export class TypeormEventStore extends EventStore implements EventStreams {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly notifier: Notifier,
    @Optional() private readonly metrics?: Metrics,
  ) {
    super();
  }

  async append(owner: EventStreamOwner, events: NewRunEvent[]): Promise<StoredRunEvent[]> {
    if (events.length === 0) return [];
    const n = events.length;
    return this.uow.run(async (m) => {
      // Lazily create the counter rows; ON CONFLICT DO NOTHING takes no lock on existing rows.
      await m.query(`INSERT INTO event_streams (stream_id) VALUES ($1), ($2) ON CONFLICT (stream_id) DO NOTHING`, [owner.sessionId, owner.runId]);
      const bump = async (streamId: string): Promise<number> => {
        const rows = rowsOf<{ last_sequence: string | number }>(
          await m.query(`UPDATE event_streams SET last_sequence = last_sequence + $2 WHERE stream_id = $1 RETURNING last_sequence`, [streamId, n]),
        );
        return Number(rows[0].last_sequence);
      };
      const lastSessionSequence = await bump(owner.sessionId); // lock 1: session
      const lastSequence = await bump(owner.runId); // lock 2: run
      const firstSession = lastSessionSequence - n + 1;
      const first = lastSequence - n + 1;
      const occurredAt = new Date();
      const stored: StoredRunEvent[] = events.map((e, i) => ({
        id: newId('evt'),
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
      await m.query(
        `INSERT INTO run_events (${COLUMNS})
         SELECT u.id, $1, $2, $3, $4, u.seq, u.sseq, u.type, u.data, $5
         FROM unnest($6::text[], $7::int[], $8::bigint[], $9::text[], $10::jsonb[]) AS u(id, seq, sseq, type, data)`,
        [
          owner.tenantId,
          owner.subjectId,
          owner.sessionId,
          owner.runId,
          occurredAt,
          stored.map((e) => e.id),
          stored.map((e) => e.sequence),
          stored.map((e) => e.sessionSequence),
          stored.map((e) => e.type),
          stored.map((e) => JSON.stringify(e.data)),
        ],
      );
      await this.notifier.announce({ sessionId: owner.sessionId, runId: owner.runId, lastSequence, lastSessionSequence });
      if (this.metrics) this.uow.afterCommit(() => this.metrics?.recordEventsAppended(events.map((e) => e.type)));
      return stored;
    });
  }

  async readRun(runId: string, afterSequence: number, limit: number): Promise<StoredRunEvent[]> {
    const rows: EventRow[] = await this.uow.manager.query(
      `SELECT ${COLUMNS} FROM run_events WHERE run_id = $1 AND sequence > $2 ORDER BY sequence ASC LIMIT $3`,
      [runId, afterSequence, limit],
    );
    return rows.map(toStored);
  }

  async readSession(sessionId: string, afterSessionSequence: number, limit: number): Promise<StoredRunEvent[]> {
    const rows: EventRow[] = await this.uow.manager.query(
      `SELECT ${COLUMNS} FROM run_events WHERE session_id = $1 AND session_sequence > $2 ORDER BY session_sequence ASC LIMIT $3`,
      [sessionId, afterSessionSequence, limit],
    );
    return rows.map(toStored);
  }

  async lastSequence(runId: string): Promise<number> {
    return (await this.state(runId)).lastSequence;
  }

  async state(streamId: string): Promise<EventStreamState> {
    const rows: Array<{ last_sequence: string; purged_through: string }> = await this.uow.manager.query(
      `SELECT last_sequence, purged_through FROM event_streams WHERE stream_id = $1`,
      [streamId],
    );
    if (rows.length === 0) return { lastSequence: 0, purgedThrough: 0 };
    return { lastSequence: Number(rows[0].last_sequence), purgedThrough: Number(rows[0].purged_through) };
  }

  async purgeFinishedRuns(cutoff: Date, maxRuns: number): Promise<PurgeResult> {
    const runs: Array<{ run_id: string }> = await this.uow.manager.query(
      `SELECT run_id FROM run_events WHERE type = 'run.finished' AND occurred_at < $1 ORDER BY occurred_at ASC LIMIT $2`,
      [cutoff, maxRuns],
    );
    let events = 0;
    for (const { run_id: runId } of runs) {
      events += await this.uow.run(async (m) => {
        const deleted = rowsOf<{ session_id: string; seq: string; sseq: string; n: string }>(
          await m.query(
            `WITH d AS (DELETE FROM run_events WHERE run_id = $1 RETURNING session_id, sequence, session_sequence)
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
