import { Injectable } from '@nestjs/common';
import { toJsonb } from '../../../common/database/jsonb';
import { queryRows } from '../../../common/database/sql';
import { GuardedRider, StatementPart, StatementParams } from '../../../common/database/statement';
import { BatchWrite, UnitOfWork } from '../../../common/database/unit-of-work';
import { DomainError } from '../../../common/errors/domain-error';
import { invalidCursor, SortOrder } from '../../../common/http/pagination';
import { ContentPart } from '../../agents/domain/model-provider';
import { MessageProps, MessageStatus, MessageWrite, NewMessage } from '../domain/message';
import { MessageFilter, MessageRepository } from '../domain/message.repository';
import { AppendPartOptions, MessageStatementParts, SessionRowChange } from './message-statement-parts';
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
 * A message append as two CTEs (`ph`: the placeholders of `appendParams`): `msg_slot` takes the
 * session's next message slot and bumps its revision (and makes the assignments `set`, if any),
 * if `condition` holds; `msg_insert` inserts the message there, returning its `sequence`. No
 * slot, no row.
 */
function appendCtes(ph: string[], condition: string, set?: string): string {
  const [session, now, id, tenant, subject, run, role, status, content, metadata] = ph;
  return `msg_slot AS (
      UPDATE sessions SET message_seq = message_seq + 1, revision = revision + 1, updated_at = ${now}${set ? `, ${set}` : ''}
       WHERE id = ${session} AND ${condition} RETURNING message_seq, active_run_id
    ),
    msg_insert AS (
      INSERT INTO messages (${COLUMNS})
      SELECT ${id}, ${tenant}, ${subject}, ${session}, ${run}, ${role}, ${status}, msg_slot.message_seq, ${content}::jsonb, ${metadata}::jsonb, ${now}, ${now}
        FROM msg_slot
      RETURNING sequence
    )`;
}

function updateParams(id: string, changes: { status?: MessageStatus; content?: ContentPart[] }): unknown[] {
  return [id, changes.status ?? null, changes.content ? toJsonb(changes.content) : null];
}

/** A message update (`ph`: the placeholders of `updateParams`), if `condition` holds. */
function updateSql(ph: string[], condition: string): string {
  const [id, status, content] = ph;
  return `UPDATE messages SET status = COALESCE(${status}, status), content = COALESCE(${content}::jsonb, content), updated_at = now()
           WHERE id = ${id} AND ${condition}`;
}

@Injectable()
export class MessageTypeormRepository extends MessageRepository implements MessageStatementParts {
  constructor(private readonly uow: UnitOfWork) {
    super();
  }

  async append(m: NewMessage, options: { expectedRevision?: number; now?: Date } = {}): Promise<MessageProps> {
    const now = options.now ?? new Date();
    // One statement: take the session's next message slot (bumping its revision, optionally
    // only at the expected revision) and insert the message there. No slot, no row.
    const p = new StatementParams();
    const ph = p.add(...appendParams(m, now));
    const [r] = p.add(options.expectedRevision ?? null);
    const inserted = await queryRows<{ sequence: number | string }>(
      this.uow.manager,
      `WITH ${appendCtes(ph, `(${r}::int IS NULL OR revision = ${r})`)} SELECT sequence FROM msg_insert`,
      p.values,
    );
    if (inserted.length === 0) throw await this.appendFailure(m.sessionId, options.expectedRevision);
    const sequence = Number(inserted[0].sequence);
    return { ...m, sequence, createdAt: now, updatedAt: now };
  }

  async appendInput(m: NewMessage, options: { expectedRevision?: number; now: Date }): Promise<void> {
    await this.uow.write(this.appendWrite(m, { ...options, refuseArchived: true }));
  }

  appendWrite(m: NewMessage, options: AppendPartOptions): BatchWrite {
    const extra = options.session;
    return {
      ctes: (p) => {
        const ph = p.add(...appendParams(m, options.now));
        const [rev] = p.add(options.expectedRevision ?? null);
        const own = extra?.render(p);
        const archived = options.refuseArchived ? ` AND status <> 'archived'` : '';
        const condition = `(${rev}::int IS NULL OR revision = ${rev})${archived}${own?.where ? ` AND ${own.where}` : ''}`;
        return appendCtes(ph, condition, own?.set);
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

  async reassignAll(ids: readonly string[], runId: string): Promise<void> {
    await this.uow.manager.query(`UPDATE messages SET run_id = $2, updated_at = now() WHERE id = ANY($1::text[])`, [ids, runId]);
  }

  async update(id: string, changes: { status?: MessageStatus; content?: ContentPart[] }): Promise<void> {
    const p = new StatementParams();
    await this.uow.manager.query(updateSql(p.add(...updateParams(id, changes)), 'TRUE'), p.values);
  }

  afterGuard(write: MessageWrite, session?: SessionRowChange): GuardedRider {
    if (write.kind === 'update') {
      if (session) throw new Error('a message update does not write the session row');
      return (p, guard) => `msg_update AS (${updateSql(p.add(...updateParams(write.id, write.changes)), guard.matched)})`;
    }
    const now = new Date();
    return (p, guard) => {
      const ph = p.add(...appendParams(write.message, now));
      return appendCtes(ph, guard.matched, session?.render(p).set);
    };
  }

  sessionAfterGuard(sessionId: string, session: SessionRowChange): GuardedRider {
    return (p, guard) => {
      const { set } = session.render(p);
      const [id] = p.add(sessionId);
      return `settle AS (UPDATE sessions SET ${set} WHERE id = ${id} AND ${guard.matched} RETURNING active_run_id)`;
    };
  }

  activeRunAfterSessionChange(): string {
    return `SELECT active_run_id FROM settle`;
  }

  sessionRowAsOfSnapshot(sessionId: string): StatementPart {
    // `xmin`: the transaction that wrote the row version. The unqualified `xmin` is the row the
    // UPDATE is changing (re-read after a concurrent update); the subquery reads the snapshot's.
    return (p) => `sessions.xmin = (SELECT s0.xmin FROM sessions s0 WHERE s0.id = ${p.add(sessionId)[0]})`;
  }

  activeRunAfterAppend(): string {
    return `SELECT active_run_id FROM msg_slot`;
  }

  sessionLocked(sessionId: string): StatementPart {
    return (p) => `EXISTS (SELECT 1 FROM sessions WHERE id = ${p.add(sessionId)[0]} FOR NO KEY UPDATE)`;
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
