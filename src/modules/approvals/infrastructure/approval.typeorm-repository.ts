import { Injectable } from '@nestjs/common';
import { toJsonb } from '../../../common/database/jsonb';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { queryRows } from '../../../common/database/sql';
import { invalidCursor } from '../../../common/http/pagination';
import { Approval, ApprovalProps } from '../domain/approval.aggregate';
import { ApprovalRepository } from '../domain/approval.repository';

interface Row {
  id: string;
  tenant_id: string;
  subject_id: string;
  session_id: string;
  run_id: string;
  tool_call_id: string;
  tool_name: string;
  arguments: unknown;
  risk: string;
  status: ApprovalProps['status'];
  decided_by: string | null;
  reason: string | null;
  version: number;
  created_at: Date;
  decided_at: Date | null;
  expires_at: Date;
}

const toDomain = (r: Row) =>
  Approval.restore({
    id: r.id,
    tenantId: r.tenant_id,
    subjectId: r.subject_id,
    sessionId: r.session_id,
    runId: r.run_id,
    toolCallId: r.tool_call_id,
    toolName: r.tool_name,
    arguments: r.arguments,
    risk: r.risk,
    status: r.status,
    decidedBy: r.decided_by,
    reason: r.reason,
    version: r.version,
    createdAt: r.created_at,
    decidedAt: r.decided_at,
    expiresAt: r.expires_at,
  });

@Injectable()
export class ApprovalTypeormRepository extends ApprovalRepository {
  constructor(private readonly uow: UnitOfWork) {
    super();
  }

  async insert(a: Approval): Promise<void> {
    const p = a.snapshot();
    await this.uow.manager.query(
      `INSERT INTO approvals (id, tenant_id, subject_id, session_id, run_id, tool_call_id, tool_name, arguments, risk, status, version, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11, $12, $13)`,
      [p.id, p.tenantId, p.subjectId, p.sessionId, p.runId, p.toolCallId, p.toolName, toJsonb(p.arguments ?? {}), p.risk, p.status, p.version, p.createdAt, p.expiresAt],
    );
  }

  async save(a: Approval): Promise<boolean> {
    const p = a.snapshot();
    const rows = await queryRows<{ id: string }>(
      this.uow.manager,
      `UPDATE approvals SET status = $3, decided_by = $4, reason = $5, decided_at = $6, version = $7
        WHERE id = $1 AND version = $2 RETURNING id`,
      [p.id, a.expectedVersion, p.status, p.decidedBy, p.reason, p.decidedAt, p.version],
    );
    return rows.length === 1;
  }

  async findById(id: string): Promise<Approval | null> {
    const rows = await queryRows<Row>(this.uow.manager, `SELECT * FROM approvals WHERE id = $1`, [id]);
    return rows[0] ? toDomain(rows[0]) : null;
  }

  async listByRun(runId: string, alsoSessions: readonly string[], page: { after?: string; limit: number; order: 'asc' | 'desc' }) {
    const scope = `(run_id = $1 OR session_id = ANY($2::text[]))`;
    let cursor: Row | null = null;
    if (page.after !== undefined) {
      const rows = await queryRows<Row>(this.uow.manager, `SELECT * FROM approvals WHERE id = $3 AND ${scope}`, [runId, [...alsoSessions], page.after]);
      if (!rows[0]) throw invalidCursor(page.after);
      cursor = rows[0];
    }
    const asc = page.order === 'asc';
    const rows = await queryRows<Row>(
      this.uow.manager,
      `SELECT * FROM approvals WHERE ${scope} AND ($3::timestamptz IS NULL OR (created_at, id) ${asc ? '>' : '<'} ($3, $4))
        ORDER BY created_at ${asc ? 'ASC' : 'DESC'}, id ${asc ? 'ASC' : 'DESC'} LIMIT $5`,
      [runId, [...alsoSessions], cursor?.created_at ?? null, cursor?.id ?? '', page.limit + 1],
    );
    return { items: rows.slice(0, page.limit).map(toDomain), hasMore: rows.length > page.limit };
  }

  async pendingOfRun(runId: string): Promise<Approval[]> {
    return (await queryRows<Row>(this.uow.manager, `SELECT * FROM approvals WHERE run_id = $1 AND status = 'pending'`, [runId])).map(toDomain);
  }

  async expiredPending(limit: number): Promise<Approval[]> {
    return (
      await queryRows<Row>(this.uow.manager, `SELECT * FROM approvals WHERE status = 'pending' AND expires_at <= now() ORDER BY expires_at LIMIT $1`, [limit])
    ).map(toDomain);
  }
}
