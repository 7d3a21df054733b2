import type { StoredRunEvent } from '../../events/domain/run-event';
import { AuditRecord, NewAuditRecord } from './audit-record';

/**
 * Port: the append-only, per-tenant hash-chained audit trail.
 *
 * Both methods run inside the caller's ambient transaction (`UnitOfWork.run` joins it), so a
 * record commits or rolls back together with the change it describes; called outside a
 * transaction they open their own short one. They lock the tenant's chain head row until the
 * transaction ends: call them LAST in a transaction (after the rows they describe are written)
 * so the head lock is held briefly and always taken after other row locks (no lock-order cycles).
 */
export abstract class AuditTrail {
  /** Appends records (any tenants) in the given order; returns them with seq and hashes. */
  abstract append(records: NewAuditRecord[]): Promise<AuditRecord[]>;
  /** Records stored run events with their full, unredacted data, chained at once. */
  abstract appendRunEvents(events: StoredRunEvent[]): Promise<AuditRecord[]>;
  /**
   * Records stored run events off the hot path: the records are written durably in the caller's
   * transaction (commit together or not at all) without taking the chain lock, and chained in
   * batches right after commit. Every read of the trail (`AuditReader`) chains what is queued
   * first, so readers never see the trail without a committed run event.
   */
  abstract recordRunEvents(events: StoredRunEvent[]): Promise<void>;
  /** Chains every queued record now (of one tenant, or of all). */
  abstract flush(tenantId?: string): Promise<void>;
}

/** How a run event is recorded: actor `system` acting for the session owner. */
export function runEventToAuditRecord(e: StoredRunEvent): NewAuditRecord {
  return {
    tenantId: e.tenantId,
    occurredAt: e.occurredAt,
    actorSubjectId: e.subjectId,
    actorRole: 'system',
    actorKeyId: null,
    action: `run_event.${e.type}`,
    resourceType: 'run_event',
    resourceId: e.id,
    sessionId: e.sessionId,
    runId: e.runId,
    requestId: null,
    outcome: 'ok',
    status: null,
    data: { type: e.type, sequence: e.sequence, session_sequence: e.sessionSequence, data: e.data },
  };
}
