import type { StoredRunEvent } from '../../events/domain/run-event';
import type { BatchWrite } from '../../../common/database/unit-of-work';
import { NewAuditRecord } from './audit-record';

/**
 * Port: the append-only, per-tenant hash-chained audit trail.
 *
 * Records are written with `enqueue`, which runs inside the caller's ambient transaction
 * (`UnitOfWork.run` joins it), so a record commits or rolls back together with the change it
 * describes, and takes no lock. They are chained (given their `seq` and hashes) after commit, by
 * a background drain or by `flush`.
 */
export abstract class AuditTrail {
  /**
   * Writes the records durably in the caller's transaction (or on their own outside one) without
   * taking the chain lock; they are chained in batches shortly after commit, in the given order.
   * Every read of the trail (`AuditReader`) chains what is queued first, so readers never see the
   * trail without a committed record. Run events need no call: the database queues their
   * records in the statement that inserts them (trigger `run_events_audit`), with their full,
   * unredacted data, as `runEventToAuditRecord` describes them.
   */
  abstract enqueue(records: NewAuditRecord[]): Promise<void>;
  /**
   * `enqueue` as a write for the caller's own statement (`UnitOfWork.write`), e.g. with the
   * change it records. Call it inside the unit of work (batch or transaction) that runs the
   * write: its commit starts the chaining.
   */
  abstract enqueueWrite(records: NewAuditRecord[]): BatchWrite;
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
