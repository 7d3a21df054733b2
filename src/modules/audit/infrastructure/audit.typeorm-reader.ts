import { Injectable } from '@nestjs/common';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { invalidCursor } from '../../../common/http/pagination';
import { isId } from '../../../common/ids/ids';
import { AuditFilters, AuditPage, AuditReader } from '../domain/audit-reader';
import { AuditCheckpoint, AuditPublicKey } from '../domain/audit-checkpoint';
import { AuditRecord, ChainEras, ChainHead } from '../domain/audit-record';
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
    const records = rows.map(auditRowToDomain);
    // Emptied once mapped (measured, bench/README.md "Session 9 (#32)"): this is the pg driver's own
    // result array. Without this, nearly every row of a long export was promoted to V8's old space
    // (~1.4 KB per record, +220 MiB RSS for 300,000 records until a full collection) although no
    // row is reachable after the batch: a dead, already promoted holder of this array (the driver's
    // result) is a root for young collections and keeps the rows it points to alive through them.
    rows.length = 0;
    return records;
  }

  async head(tenantId: string): Promise<ChainHead | null> {
    await this.trail.flush(tenantId);
    const rows: Array<{ last_seq: string; last_hash: string; legacy_until: string; keyed_until: string; tag: string }> = await this.uow.manager.query(
      `SELECT last_seq, last_hash, legacy_until, keyed_until, tag FROM audit_chain_heads WHERE tenant_id = $1`,
      [tenantId],
    );
    if (!rows.length) return null;
    const r = rows[0];
    return { tenantId, lastSeq: Number(r.last_seq), lastHash: r.last_hash, legacyUntil: Number(r.legacy_until), keyedUntil: Number(r.keyed_until), tag: r.tag };
  }

  async byId(tenantId: string, id: string): Promise<{ record: AuditRecord; eras: ChainEras } | null> {
    const rows: Array<AuditRow & { legacy_until: string | null; keyed_until: string | null }> = await this.uow.manager.query(
      `SELECT ${AUDIT_COLUMNS.split(', ').map((c) => `r.${c}`).join(', ')}, h.legacy_until, h.keyed_until
         FROM audit_records r LEFT JOIN audit_chain_heads h ON h.tenant_id = r.tenant_id
        WHERE r.id = $1 AND r.tenant_id = $2`,
      [id, tenantId],
    );
    if (!rows.length) return null;
    return { record: auditRowToDomain(rows[0]), eras: { legacyUntil: Number(rows[0].legacy_until ?? 0), keyedUntil: Number(rows[0].keyed_until ?? 0) } };
  }

  async firstSeq(tenantId: string): Promise<number | null> {
    const rows: Array<{ seq: string }> = await this.uow.manager.query(`SELECT seq FROM audit_records WHERE tenant_id = $1 ORDER BY seq ASC LIMIT 1`, [tenantId]);
    return rows.length ? Number(rows[0].seq) : null;
  }

  async seqRange(tenantId: string, from?: Date, to?: Date): Promise<{ first: number; last: number } | null> {
    await this.trail.flush(tenantId);
    const rows: Array<{ first: string | null; last: string | null }> = await this.uow.manager.query(
      `SELECT min(seq) AS first, max(seq) AS last FROM audit_records
        WHERE tenant_id = $1 AND ($2::timestamptz IS NULL OR occurred_at >= $2) AND ($3::timestamptz IS NULL OR occurred_at < $3)`,
      [tenantId, from ?? null, to ?? null],
    );
    const r = rows[0];
    return r && r.first !== null && r.last !== null ? { first: Number(r.first), last: Number(r.last) } : null;
  }

  async checkpoints(tenantId: string, fromSeq: number, toSeq: number, limit: number): Promise<AuditCheckpoint[]> {
    const rows: CheckpointRow[] = await this.uow.manager.query(
      `SELECT tenant_id, seq, hash, at, key_id, signature FROM audit_checkpoints WHERE tenant_id = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq ASC LIMIT $4`,
      [tenantId, fromSeq, toSeq, limit],
    );
    return rows.map(checkpointRowToDomain);
  }

  async latestCheckpoint(tenantId: string): Promise<AuditCheckpoint | null> {
    const rows: CheckpointRow[] = await this.uow.manager.query(
      `SELECT tenant_id, seq, hash, at, key_id, signature FROM audit_checkpoints WHERE tenant_id = $1 ORDER BY seq DESC LIMIT 1`,
      [tenantId],
    );
    return rows.length ? checkpointRowToDomain(rows[0]) : null;
  }

  async publicKeys(): Promise<AuditPublicKey[]> {
    const rows: Array<{ key_id: string; public_key: string; created_at: Date }> = await this.uow.manager.query(
      `SELECT key_id, public_key, created_at FROM audit_signing_keys ORDER BY created_at ASC, key_id ASC LIMIT 1000`,
    );
    return rows.map((r) => ({ keyId: r.key_id, publicKeyPem: r.public_key, createdAt: new Date(r.created_at) }));
  }

  async legalHold(tenantId: string): Promise<{ enabled: boolean; updatedAt: Date | null; updatedBy: string | null }> {
    const rows: Array<{ enabled: boolean; updated_at: Date; updated_by: string | null }> = await this.uow.manager.query(
      `SELECT enabled, updated_at, updated_by FROM audit_legal_holds WHERE tenant_id = $1`,
      [tenantId],
    );
    return rows.length ? { enabled: rows[0].enabled, updatedAt: new Date(rows[0].updated_at), updatedBy: rows[0].updated_by } : { enabled: false, updatedAt: null, updatedBy: null };
  }
}

/** A row of `audit_checkpoints` as the pg driver returns it. */
export interface CheckpointRow {
  tenant_id: string;
  seq: string | number;
  hash: string;
  at: Date | string;
  key_id: string;
  signature: string;
}

export function checkpointRowToDomain(r: CheckpointRow): AuditCheckpoint {
  return { tenantId: r.tenant_id, seq: Number(r.seq), hash: r.hash, at: new Date(r.at), keyId: r.key_id, signature: r.signature };
}
