import { toJsonb } from '../../../common/database/jsonb';
import { AuditRecord } from '../domain/audit-record';

/** A row of `audit_records` as the pg driver returns it (bigint as string). */
export interface AuditRow {
  id: string;
  tenant_id: string;
  seq: string | number;
  occurred_at: Date;
  actor_subject_id: string | null;
  actor_role: string | null;
  actor_key_id: string | null;
  action: string;
  resource_type: string | null;
  resource_id: string | null;
  session_id: string | null;
  run_id: string | null;
  request_id: string | null;
  outcome: string | null;
  status: number | null;
  data: Record<string, unknown>;
  prev_hash: string;
  hash: string;
  mac: string | null;
}

export const AUDIT_COLUMNS =
  'id, tenant_id, seq, occurred_at, actor_subject_id, actor_role, actor_key_id, action, resource_type, resource_id, ' +
  'session_id, run_id, request_id, outcome, status, data, prev_hash, hash, mac';

export function auditRowToDomain(r: AuditRow): AuditRecord {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    seq: Number(r.seq),
    occurredAt: new Date(r.occurred_at),
    actorSubjectId: r.actor_subject_id,
    actorRole: r.actor_role,
    actorKeyId: r.actor_key_id,
    action: r.action,
    resourceType: r.resource_type,
    resourceId: r.resource_id,
    sessionId: r.session_id,
    runId: r.run_id,
    requestId: r.request_id,
    outcome: r.outcome,
    status: r.status === null ? null : Number(r.status),
    data: r.data,
    prevHash: r.prev_hash,
    hash: r.hash,
    mac: r.mac,
  };
}

export function auditRecordToParams(r: AuditRecord): unknown[] {
  return [
    r.id,
    r.tenantId,
    r.seq,
    r.occurredAt,
    r.actorSubjectId,
    r.actorRole,
    r.actorKeyId,
    r.action,
    r.resourceType,
    r.resourceId,
    r.sessionId,
    r.runId,
    r.requestId,
    r.outcome,
    r.status,
    toJsonb(r.data),
    r.prevHash,
    r.hash,
    r.mac,
  ];
}
