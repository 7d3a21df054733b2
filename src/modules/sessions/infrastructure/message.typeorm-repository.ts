import { Injectable } from '@nestjs/common';
import { toJsonb } from '../../../common/database/jsonb';
import { queryRows, SqlCte } from '../../../common/database/sql';
import { BatchWrite, UnitOfWork } from '../../../common/database/unit-of-work';
import { DomainError } from '../../../common/errors/domain-error';
import { invalidCursor, SortOrder } from '../../../common/http/pagination';
import { ContentPart } from '../../agents/domain/model-provider';
import { MessageProps, MessageStatus, MessageWrite, NewMessage, SessionRowChange } from '../domain/message';
import { AppendWriteOptions, MessageFilter, MessageRepository } from '../domain/message.repository';
import { sessionArchived, sessionNotFound } from '../domain/session.errors';

interface MessageRow {
  id: string;
  tenant_id: string;
  subject_id: string;
  session_id: string;
  run_id: string | null;
  role: MessageProps['role'];
  status: MessageStatus;
  sequence: number;
  content: ContentPart[];
  metadata: Record<string, string>;
  created_at: Date;
  updated_at: Date;
}

function toProps(r: MessageRow): MessageProps {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    subjectId: r.subject_id,
    sessionId: r.session_id,
    runId: r.run_id,
    role: r.role,
    status: r.status,
    sequence: Number(r.sequence),
    content: r.content,
    metadata: r.metadata ?? {},
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/** The bounds of an `integer` column: no sequence lies beyond them. */
const INT_MIN = -2147483648;
const INT_MAX = 2147483647;

const COLUMNS = 'id, tenant_id, subject_id, session_id, run_id, role, status, sequence, content, metadata, created_at, updated_at';

/** The parameters of `appendCtes`, in its order. */
function appendParams(m: NewMessage, now: Date): unknown[] {
  return [m.sessionId, now, m.id, m.tenantId, m.subjectId, m.runId, m.role, m.status, toJsonb(m.content), toJsonb(m.metadata)];
}

/**
 * A message append as two CTEs (parameters `appendParams` from `$${o + 1}`): `msg_slot` takes the
 * session's next message slot and bumps its revision (and makes the assignments `set`, if any),
 * if `condition` holds; `msg_insert` inserts the message there, returning its `sequence`. No
 * slot, no row.
 */
function appendCtes(o: number, condition: string, set?: string): string {
  return `msg_slot AS (
      UPDATE sessions SET message_seq = message_seq + 1, revision = revision + 1, updated_at = $${o + 2}${set ? `, ${set}` : ''}
       WHERE id = $${o + 1} AND ${condition} RETURNING message_seq
    ),
    msg_insert AS (
      INSERT INTO messages (${COLUMNS})
      SELECT $${o + 3}, $${o + 4}, $${o + 5}, $${o + 1}, $${o + 6}, $${o + 7}, $${o + 8}, msg_slot.message_seq, $${o + 9}::jsonb, $${o + 10}::jsonb, $${o + 2}, $${o + 2}
        FROM msg_slot
      RETURNING sequence
    )`;
}

function updateParams(id: string, changes: { status?: MessageStatus; content?: ContentPart[] }): unknown[] {
  return [id, changes.status ?? null, changes.content ? toJsonb(changes.content) : null];
}

/** A message update (parameters `updateParams` from `$${o + 1}`), if `condition` holds. */
function updateSql(o: number, condition: string): string {
  return `UPDATE messages SET status = COALESCE($${o + 2}, status), content = COALESCE($${o + 3}::jsonb, content), updated_at = now()
           WHERE id = $${o + 1} AND ${condition}`;
}

@Injectable()
export class MessageTypeormRepository extends MessageRepository {
  constructor(private readonly uow: UnitOfWork) {
    super();
  }

  async append(m: NewMessage, options: { expectedRevision?: number; now?: Date } = {}): Promise<MessageProps> {
    const now = options.now ?? new Date();
    // One statement: take the session's next message slot (bumping its revision, optionally
    // only at the expected revision) and insert the message there. No slot, no row.
    const params = appendParams(m, now);
    const r = params.length + 1;
    const inserted = await queryRows<{ sequence: number | string }>(
      this.uow.manager,
      `WITH ${appendCtes(0, `($${r}::int IS NULL OR revision = $${r})`)} SELECT sequence FROM msg_insert`,
      [...params, options.expectedRevision ?? null],
    );
    if (inserted.length === 0) throw await this.appendFailure(m.sessionId, options.expectedRevision);
    const sequence = Number(inserted[0].sequence);
    return { ...m, sequence, createdAt: now, updatedAt: now };
  }

  appendWrite(m: NewMessage, options: AppendWriteOptions): BatchWrite {
    const params = [...appendParams(m, options.now), options.expectedRevision ?? null];
    const r = params.length;
    const extra = options.session;
    return {
      ctes: {
        params: [...params, ...(extra?.params ?? [])],
        sql: (o) => {
          const rev = `$${o + r}`;
          const archived = options.refuseArchived ? ` AND status <> 'archived'` : '';
          const condition = `(${rev}::int IS NULL OR revision = ${rev})${archived}${extra?.where ? ` AND ${extra.where(o + r)}` : ''}`;
          return appendCtes(o, condition, extra?.set(o + r));
        },
      },
      expect: 'EXISTS (SELECT 1 FROM msg_insert)',
      fail: () => this.appendFailure(m.sessionId, options.expectedRevision, extra, options.refuseArchived),
    };
  }

  /** Why an append took no slot: no session, an archived one, a stale revision, or the caller's own condition. */
  private async appendFailure(sessionId: string, expectedRevision: number | undefined, extra?: SessionRowChange, refuseArchived = false): Promise<Error> {
    const cur: Array<{ revision: number; status: string }> = await this.uow.manager.query(`SELECT revision, status FROM sessions WHERE id = $1`, [sessionId]);
    if (cur.length === 0) return sessionNotFound(sessionId);
    if (refuseArchived && cur[0].status === 'archived') return sessionArchived(sessionId);
    if (expectedRevision === undefined || cur[0].revision === expectedRevision) {
      const own = await extra?.fail?.();
      if (own) return own;
    }
    return new DomainError('session_conflict', `the session is at revision ${cur[0].revision}, not ${expectedRevision}`, {
      session_id: sessionId,
      current_revision: cur[0].revision,
      expected_revision: expectedRevision,
    });
  }

  async reassign(id: string, runId: string): Promise<void> {
    await this.uow.manager.query(`UPDATE messages SET run_id = $2, updated_at = now() WHERE id = $1`, [id, runId]);
  }

  async update(id: string, changes: { status?: MessageStatus; content?: ContentPart[] }): Promise<void> {
    await this.uow.manager.query(updateSql(0, 'TRUE'), updateParams(id, changes));
  }

  guardedWrite(write: MessageWrite, session?: SessionRowChange): SqlCte {
    const onGuard = 'EXISTS (SELECT 1 FROM guard)';
    if (write.kind === 'update') {
      if (session) throw new Error('a message update does not write the session row');
      return { params: updateParams(write.id, write.changes), sql: (o) => `msg_update AS (${updateSql(o, onGuard)})` };
    }
    const params = appendParams(write.message, new Date());
    const n = params.length;
    return { params: [...params, ...(session?.params ?? [])], sql: (o) => appendCtes(o, onGuard, session?.set(o + n)) };
  }

  async findById(id: string): Promise<MessageProps | null> {
    const rows: MessageRow[] = await this.uow.manager.query(`SELECT ${COLUMNS} FROM messages WHERE id = $1`, [id]);
    return rows[0] ? toProps(rows[0]) : null;
  }

  async list(sessionId: string, page: { after?: string; limit: number; order: SortOrder }, filter: MessageFilter = {}) {
    let afterSeq: number | null = null;
    if (page.after !== undefined) {
      const rows: Array<{ sequence: number }> = await this.uow.manager.query(
        `SELECT sequence FROM messages WHERE id = $1 AND session_id = $2`,
        [page.after, sessionId],
      );
      if (rows.length === 0) throw invalidCursor(page.after);
      afterSeq = Number(rows[0].sequence);
    }
    const asc = page.order === 'asc';
    // Keyset on the session's `sequence`: the unique (session_id, sequence) index, or for one
    // run's messages the (run_id, sequence) index (a run's messages are its session's); either
    // reads `limit + 1` index entries from the cursor on, whatever the session's size. The bound
    // is COALESCE'd rather than `$2 IS NULL OR ...`, so that it stays an index condition in the
    // generic plan of a prepared statement too (the OR form became a filter: every entry of the
    // session before the cursor was read).
    const scope = filter.runId === undefined ? 'session_id = $1' : 'run_id = $4 AND session_id = $1';
    const bound = asc ? `sequence > COALESCE($2::int, ${INT_MIN})` : `sequence < COALESCE($2::int, ${INT_MAX})`;
    const rows: MessageRow[] = await this.uow.manager.query(
      `SELECT ${COLUMNS} FROM messages WHERE ${scope} AND ${bound}
        ORDER BY sequence ${asc ? 'ASC' : 'DESC'} LIMIT $3`,
      filter.runId === undefined ? [sessionId, afterSeq, page.limit + 1] : [sessionId, afterSeq, page.limit + 1, filter.runId],
    );
    const hasMore = rows.length > page.limit;
    return { items: rows.slice(0, page.limit).map(toProps), hasMore };
  }

  async history(sessionId: string): Promise<MessageProps[]> {
    const rows: MessageRow[] = await this.uow.manager.query(`SELECT ${COLUMNS} FROM messages WHERE session_id = $1 ORDER BY sequence`, [sessionId]);
    return rows.map(toProps);
  }
}
