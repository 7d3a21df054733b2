import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { newId } from '../../../common/ids/ids';
import type { StoredRunEvent } from '../../events/domain/run-event';
import { AuditRecord, auditHash, GENESIS_HASH, jsonSafe, NewAuditRecord } from '../domain/audit-record';
import { AuditTrail, runEventToAuditRecord } from '../domain/audit-trail';
import { AUDIT_COLUMNS, auditRecordToParams } from './audit-row';

const COLUMN_COUNT = 18;
/** Rows per INSERT statement (PostgreSQL allows 65535 parameters per statement). */
const ROWS_PER_INSERT = 1000;

/**
 * The audit trail on PostgreSQL. Per tenant, inside the ambient transaction: make sure the chain
 * head row exists (`INSERT ... ON CONFLICT DO NOTHING`), lock it (`SELECT ... FOR UPDATE`), chain
 * the new records onto it, insert them with one multi-row INSERT and move the head. The head lock
 * serialises appenders of one tenant, so `seq` is gap-free and in commit order; other tenants'
 * chains are independent. Tenants are locked in sorted order, so two multi-tenant appends can't deadlock.
 */
@Injectable()
export class AuditTypeormTrail extends AuditTrail {
  constructor(private readonly uow: UnitOfWork) {
    super();
  }

  async append(records: NewAuditRecord[]): Promise<AuditRecord[]> {
    if (records.length === 0) return [];
    const byTenant = new Map<string, NewAuditRecord[]>();
    for (const r of records) byTenant.set(r.tenantId, [...(byTenant.get(r.tenantId) ?? []), r]);
    const tenants = [...byTenant.keys()].sort();
    return this.uow.run(async (m) => {
      const out: AuditRecord[] = [];
      for (const tenant of tenants) out.push(...(await this.appendForTenant(m, tenant, byTenant.get(tenant)!)));
      return out;
    });
  }

  appendRunEvents(events: StoredRunEvent[]): Promise<AuditRecord[]> {
    return this.append(events.map(runEventToAuditRecord));
  }

  private async appendForTenant(m: EntityManager, tenantId: string, records: NewAuditRecord[]): Promise<AuditRecord[]> {
    await m.query(`INSERT INTO audit_chain_heads (tenant_id, last_seq, last_hash) VALUES ($1, 0, $2) ON CONFLICT (tenant_id) DO NOTHING`, [
      tenantId,
      GENESIS_HASH,
    ]);
    const heads: Array<{ last_seq: string; last_hash: string }> = await m.query(
      `SELECT last_seq, last_hash FROM audit_chain_heads WHERE tenant_id = $1 FOR UPDATE`,
      [tenantId],
    );
    let seq = Number(heads[0].last_seq);
    let prevHash = heads[0].last_hash;
    const now = new Date();
    const chained: AuditRecord[] = records.map((r) => {
      seq += 1;
      const body = {
        id: newId('aud'),
        tenantId,
        seq,
        occurredAt: new Date((r.occurredAt ?? now).getTime()),
        actorSubjectId: r.actorSubjectId ?? null,
        actorRole: r.actorRole ?? null,
        actorKeyId: r.actorKeyId ?? null,
        action: r.action,
        resourceType: r.resourceType ?? null,
        resourceId: r.resourceId ?? null,
        sessionId: r.sessionId ?? null,
        runId: r.runId ?? null,
        requestId: r.requestId ?? null,
        outcome: r.outcome ?? null,
        status: r.status ?? null,
        data: (jsonSafe(r.data ?? {}) ?? {}) as Record<string, unknown>,
      };
      const hash = auditHash(prevHash, body);
      const record: AuditRecord = { ...body, prevHash, hash };
      prevHash = hash;
      return record;
    });
    for (let i = 0; i < chained.length; i += ROWS_PER_INSERT) {
      const chunk = chained.slice(i, i + ROWS_PER_INSERT);
      const params: unknown[] = [];
      const tuples = chunk.map((r, j) => {
        params.push(...auditRecordToParams(r));
        const base = j * COLUMN_COUNT;
        return `(${Array.from({ length: COLUMN_COUNT }, (_, k) => `$${base + k + 1}${k === 15 ? '::jsonb' : ''}`).join(', ')})`;
      });
      await m.query(`INSERT INTO audit_records (${AUDIT_COLUMNS}) VALUES ${tuples.join(', ')}`, params);
    }
    await m.query(`UPDATE audit_chain_heads SET last_seq = $2, last_hash = $3 WHERE tenant_id = $1`, [tenantId, seq, prevHash]);
    return chained;
  }
}
