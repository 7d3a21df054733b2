import { Injectable } from '@nestjs/common';
import { queryRows, SqlCte } from '../../../common/database/sql';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { DomainError } from '../../../common/errors/domain-error';
import { invalidCursor, SortOrder } from '../../../common/http/pagination';
import { ContentPart } from '../../agents/domain/model-provider';
import { MessageProps, MessageStatus, MessageWrite, NewMessage } from '../domain/message';
import { MessageRepository } from '../domain/message.repository';
import { sessionNotFound } from '../domain/session.errors';

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

const COLUMNS = 'id, tenant_id, subject_id, session_id, run_id, role, status, sequence, content, metadata, created_at, updated_at';

@Injectable()
export class MessageTypeormRepository extends MessageRepository {
  constructor(private readonly uow: UnitOfWork) {
    super();
  }

  async append(m: NewMessage, options: { expectedRevision?: number; now?: Date } = {}): Promise<MessageProps> {
    const now = options.now ?? new Date();
    // One statement: take the session's next message slot (bumping its revision, optionally
    // only at the expected revision) and insert the message there. No slot, no row.
    const inserted = await queryRows<{ sequence: number | string }>(
      this.uow.manager,
      `WITH slot AS (
         UPDATE sessions SET message_seq = message_seq + 1, revision = revision + 1, updated_at = $2
          WHERE id = $1 AND ($3::int IS NULL OR revision = $3) RETURNING message_seq
       )
       INSERT INTO messages (${COLUMNS})
       SELECT $4, $5, $6, $1, $7, $8, $9, slot.message_seq, $10::jsonb, $11::jsonb, $2, $2 FROM slot
       RETURNING sequence`,
      [m.sessionId, now, options.expectedRevision ?? null, m.id, m.tenantId, m.subjectId, m.runId, m.role, m.status, JSON.stringify(m.content), JSON.stringify(m.metadata)],
    );
    if (inserted.length === 0) {
      const cur: Array<{ revision: number }> = await this.uow.manager.query(`SELECT revision FROM sessions WHERE id = $1`, [m.sessionId]);
      if (cur.length === 0) throw sessionNotFound(m.sessionId);
      throw new DomainError('session_conflict', `the session is at revision ${cur[0].revision}, not ${options.expectedRevision}`, {
        session_id: m.sessionId,
        current_revision: cur[0].revision,
        expected_revision: options.expectedRevision,
      });
    }
    const sequence = Number(inserted[0].sequence);
    return { ...m, sequence, createdAt: now, updatedAt: now };
  }

  async update(id: string, changes: { status?: MessageStatus; content?: ContentPart[] }): Promise<void> {
    await this.uow.manager.query(
      `UPDATE messages SET status = COALESCE($2, status), content = COALESCE($3::jsonb, content), updated_at = now() WHERE id = $1`,
      [id, changes.status ?? null, changes.content ? JSON.stringify(changes.content) : null],
    );
  }

  guardedWrite(write: MessageWrite): SqlCte {
    if (write.kind === 'update') {
      const { id, changes } = write;
      return {
        params: [id, changes.status ?? null, changes.content ? JSON.stringify(changes.content) : null],
        sql: (o) =>
          `msg_update AS (
             UPDATE messages SET status = COALESCE($${o + 2}, status), content = COALESCE($${o + 3}::jsonb, content), updated_at = now()
              WHERE id = $${o + 1} AND EXISTS (SELECT 1 FROM guard)
           )`,
      };
    }
    const m = write.message;
    return {
      params: [m.sessionId, new Date(), m.id, m.tenantId, m.subjectId, m.runId, m.role, m.status, JSON.stringify(m.content), JSON.stringify(m.metadata)],
      sql: (o) =>
        `msg_slot AS (
           UPDATE sessions SET message_seq = message_seq + 1, revision = revision + 1, updated_at = $${o + 2}
            WHERE id = $${o + 1} AND EXISTS (SELECT 1 FROM guard) RETURNING message_seq
         ),
         msg_insert AS (
           INSERT INTO messages (${COLUMNS})
           SELECT $${o + 3}, $${o + 4}, $${o + 5}, $${o + 1}, $${o + 6}, $${o + 7}, $${o + 8}, msg_slot.message_seq, $${o + 9}::jsonb, $${o + 10}::jsonb, $${o + 2}, $${o + 2}
             FROM msg_slot
         )`,
    };
  }

  async findById(id: string): Promise<MessageProps | null> {
    const rows: MessageRow[] = await this.uow.manager.query(`SELECT ${COLUMNS} FROM messages WHERE id = $1`, [id]);
    return rows[0] ? toProps(rows[0]) : null;
  }

  async list(sessionId: string, page: { after?: string; limit: number; order: SortOrder }) {
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
    const rows: MessageRow[] = await this.uow.manager.query(
      `SELECT ${COLUMNS} FROM messages WHERE session_id = $1 AND ($2::int IS NULL OR sequence ${asc ? '>' : '<'} $2)
        ORDER BY sequence ${asc ? 'ASC' : 'DESC'} LIMIT $3`,
      [sessionId, afterSeq, page.limit + 1],
    );
    const hasMore = rows.length > page.limit;
    return { items: rows.slice(0, page.limit).map(toProps), hasMore };
  }

  async history(sessionId: string): Promise<MessageProps[]> {
    const rows: MessageRow[] = await this.uow.manager.query(`SELECT ${COLUMNS} FROM messages WHERE session_id = $1 ORDER BY sequence`, [sessionId]);
    return rows.map(toProps);
  }
}
