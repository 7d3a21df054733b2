import { AuditCheckpoint } from './audit-checkpoint';
import { ChainBreak } from './audit-record';

/** The outcome of one attempt to sign a tenant's head. */
export type CheckpointOutcome = { outcome: 'signed'; checkpoint: AuditCheckpoint } | { outcome: 'not_due' } | { outcome: 'refused'; broken: ChainBreak };

/** Port: signs tenants' chain heads (after checking every record since the last checkpoint). */
export abstract class AuditCheckpointer {
  /** Signs the tenant's head now if it is due (`force`: whenever it is past the last checkpoint). */
  abstract checkpoint(tenantId: string, force?: boolean): Promise<CheckpointOutcome>;
}
