import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';

export type AuditExportFormat = 'ndjson' | 'csv';

export interface AuditExportRange {
  /** occurred_at >= from */
  from?: Date;
  /** occurred_at < to */
  to?: Date;
}

export interface AuditExport {
  /** The first and last seq exported (a contiguous part of the chain); null bounds when there is nothing to export. */
  fromSeq: number | null;
  toSeq: number | null;
  /** The body, in pieces of a batch each (UTF-8 bytes; the header and end lines as strings), produced as the consumer pulls them. */
  chunks: AsyncIterable<string | Buffer>;
}

/** Streams the records of the caller's tenant in a range, with their hashes and the checkpoints covering them. */
export class ExportAuditTrailQuery extends Query<AuditExport> {
  constructor(
    readonly principal: Principal,
    readonly range: AuditExportRange,
    readonly format: AuditExportFormat,
    readonly batchSize = 1000,
  ) {
    super();
  }
}
