import { Injectable } from '@nestjs/common';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { invalidCursor } from '../../../common/http/pagination';
import { isId } from '../../../common/ids/ids';
import { AuditFilters, AuditPage, AuditReader } from '../domain/audit-reader';
import { AuditRecord, ChainHead } from '../domain/audit-record';
import { AuditTrail } from '../domain/audit-trail';
import { AUDIT_COLUMNS, AuditRow, auditRowToDomain } from './audit-row';

@Injectable()
export class AuditTypeormReader extends AuditReader {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly trail: AuditTrail,
  ) {
    super();
  }

  async list(tenantId: string, filters: AuditFilters, page: AuditPage): Promise<{ items: AuditRecord[]; hasMore: boolean }> {
    // Run-event records are chained shortly after their commit: chain what is queued first.
    await this.trail.flush(tenantId);
    const m = this.uow.manager;
    const where: string[] = ['tenant_id = $1'];
    const params: unknown[] = [tenantId];
    const add = (sql: string, value: unknown) => {
      params.push(value);
      where.push(sql.replace('?', `$${params.length}`));
    };
    if (page.after !== undefined) {
      if (!isId(page.after, 'aud')) throw invalidCursor(page.after);
      const rows: Array<{ seq: string }> = await m.query(`SELECT seq FROM audit_records WHERE tenant_id = $1 AND id = $2`, [tenantId, page.after]);
      if (!rows.length) throw invalidCursor(page.after);
      add(page.order === 'asc' ? 'seq > ?' : 'seq < ?', rows[0].seq);
    }
    if (filters.sessionId !== undefined) add('session_id = ?', filters.sessionId);
    if (filters.runId !== undefined) add('run_id = ?', filters.runId);
    if (filters.actor !== undefined) add('actor_subject_id = ?', filters.actor);
    if (filters.action !== undefined) add('action = ?', filters.action);
    if (filters.resourceId !== undefined) add('resource_id = ?', filters.resourceId);
    if (filters.from !== undefined) add('occurred_at >= ?', filters.from);
    if (filters.to !== undefined) add('occurred_at < ?', filters.to);
    params.push(page.limit + 1);
    const rows: AuditRow[] = await m.query(
      `SELECT ${AUDIT_COLUMNS} FROM audit_records WHERE ${where.join(' AND ')}
       ORDER BY seq ${page.order === 'asc' ? 'ASC' : 'DESC'} LIMIT $${params.length}`,
      params,
    );
    const hasMore = rows.length > page.limit;
    return { items: (hasMore ? rows.slice(0, page.limit) : rows).map(auditRowToDomain), hasMore };
  }

  async readChain(tenantId: string, afterSeq: number, uptoSeq: number, limit: number): Promise<AuditRecord[]> {
    const rows: AuditRow[] = await this.uow.manager.query(
      `SELECT ${AUDIT_COLUMNS} FROM audit_records WHERE tenant_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq ASC LIMIT $4`,
      [tenantId, afterSeq, uptoSeq, limit],
    );
    return rows.map(auditRowToDomain);
  }

  async head(tenantId: string): Promise<ChainHead | null> {
    await this.trail.flush(tenantId);
    const rows: Array<{ last_seq: string; last_hash: string; legacy_until: string; tag: string }> = await this.uow.manager.query(
      `SELECT last_seq, last_hash, legacy_until, tag FROM audit_chain_heads WHERE tenant_id = $1`,
      [tenantId],
    );
    if (!rows.length) return null;
    const r = rows[0];
    return { tenantId, lastSeq: Number(r.last_seq), lastHash: r.last_hash, legacyUntil: Number(r.legacy_until), tag: r.tag };
  }
}
