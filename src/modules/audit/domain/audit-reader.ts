import { SortOrder } from '../../../common/http/pagination';
import { AuditCheckpoint, AuditPublicKey } from './audit-checkpoint';
import { AuditRecord, ChainEras, ChainHead } from './audit-record';

export interface AuditFilters {
  sessionId?: string;
  runId?: string;
  /** The actor's subject id. */
  actor?: string;
  action?: string;
  resourceId?: string;
  /** occurred_at >= from */
  from?: Date;
  /** occurred_at < to */
  to?: Date;
}

export interface AuditPage {
  /** An audit record id of the same tenant: the page starts after it (in `order`). */
  after?: string;
  limit: number;
  order: SortOrder;
}

/** Port: reads of one tenant's audit trail, always bounded. */
export abstract class AuditReader {
  /** A keyset page on `seq`; an unknown or foreign `after` is 400 `invalid_cursor`. */
  abstract list(tenantId: string, filters: AuditFilters, page: AuditPage): Promise<{ items: AuditRecord[]; hasMore: boolean }>;
  /** Up to `limit` records with seq > afterSeq and seq <= uptoSeq, ascending. */
  abstract readChain(tenantId: string, afterSeq: number, uptoSeq: number, limit: number): Promise<AuditRecord[]>;
  /** The tenant's chain head (chaining what is queued first), or null when it has none yet. */
  abstract head(tenantId: string): Promise<ChainHead | null>;
  /** One record of the tenant by id, with its chain's eras (for `hash_alg`); null when there is none. Does not chain what is queued. */
  abstract byId(tenantId: string, id: string): Promise<{ record: AuditRecord; eras: ChainEras } | null>;
  /** The lowest seq still stored (above 1 after a prune), or null for an empty trail. */
  abstract firstSeq(tenantId: string): Promise<number | null>;
  /** The first and last seq of the records with from <= occurred_at < to (either bound optional), or null when none. */
  abstract seqRange(tenantId: string, from?: Date, to?: Date): Promise<{ first: number; last: number } | null>;
  /** Up to `limit` checkpoints with fromSeq <= seq <= toSeq, ascending. */
  abstract checkpoints(tenantId: string, fromSeq: number, toSeq: number, limit: number): Promise<AuditCheckpoint[]>;
  /** The tenant's latest checkpoint, or null. */
  abstract latestCheckpoint(tenantId: string): Promise<AuditCheckpoint | null>;
  /** Every public key that signed checkpoints (old ones after a rotation too), oldest first. */
  abstract publicKeys(): Promise<AuditPublicKey[]>;
  /** Whether the tenant is on legal hold (its records are not pruned), and since when. */
  abstract legalHold(tenantId: string): Promise<{ enabled: boolean; updatedAt: Date | null; updatedBy: string | null }>;
}
