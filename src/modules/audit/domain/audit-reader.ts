import { SortOrder } from '../../../common/http/pagination';
import { AuditRecord, ChainHead } from './audit-record';

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
}
