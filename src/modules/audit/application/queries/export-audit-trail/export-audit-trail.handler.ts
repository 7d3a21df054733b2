import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { DomainError } from '../../../../../common/errors/domain-error';
import { AuditCheckpointer } from '../../../domain/audit-checkpointer';
import { csvHeader, csvRow, EXPORT_FORMAT, EXPORT_VERSION, exportedCheckpoint, exportedRecord } from '../../../domain/audit-export';
import { AuditReader } from '../../../domain/audit-reader';
import { ChainEras } from '../../../domain/audit-record';
import { AuditExport, AuditExportFormat, ExportAuditTrailQuery } from './export-audit-trail.query';

/**
 * The export (CONTRACT section 10): a contiguous seq range, from the first record with
 * occurred_at >= `from` to the last with occurred_at < `to` (every record between them, so the
 * range verifies as a chain; without bounds: the whole stored chain), read in keyset batches of
 * `batchSize` (each its own bounded query) only as the consumer pulls: memory stays flat however
 * long the range. Without `to` the head is signed first, so the whole export is covered.
 * ndjson lines: a `header`; the signed checkpoint just before the first record, if any (a pruned
 * chain or a later range starts there); every record, each followed by the checkpoint at its seq
 * if there is one; an `end` line with the counts (a cut-off download lacks it).
 */
@QueryHandler(ExportAuditTrailQuery)
export class ExportAuditTrailHandler implements IQueryHandler<ExportAuditTrailQuery> {
  constructor(
    private readonly reader: AuditReader,
    private readonly checkpointer: AuditCheckpointer,
  ) {}

  async execute({ principal, range, format, batchSize }: ExportAuditTrailQuery): Promise<AuditExport> {
    if (principal.role !== 'admin') throw new DomainError('forbidden', 'the audit trail needs an admin API key');
    const tenantId = principal.tenantId;
    let head = await this.reader.head(tenantId);
    if (range.to === undefined && head) {
      // The head as of now (what was queued is chained by head()), signed so the whole export is covered.
      await this.checkpointer.checkpoint(tenantId, true);
      head = await this.reader.head(tenantId);
    }
    const span = head ? await this.reader.seqRange(tenantId, range.from, range.to) : null;
    const eras: ChainEras = { legacyUntil: head?.legacyUntil ?? 0, keyedUntil: head?.keyedUntil ?? 0 };
    const toSeq = span && head ? Math.min(span.last, head.lastSeq) : null;
    const fromSeq = span && toSeq !== null && span.first <= toSeq ? span.first : null;
    return { fromSeq, toSeq: fromSeq === null ? null : toSeq, chunks: this.chunks(tenantId, fromSeq, fromSeq === null ? null : toSeq, eras, format, batchSize) };
  }

  private async *chunks(
    tenantId: string,
    fromSeq: number | null,
    toSeq: number | null,
    eras: ChainEras,
    format: AuditExportFormat,
    batchSize: number,
  ): AsyncGenerator<string | Buffer> {
    const line = format === 'csv' ? csvRow : (o: Record<string, unknown>) => JSON.stringify(o) + '\n';
    if (format === 'csv') yield csvHeader();
    else {
      yield line({
        kind: 'header',
        format: EXPORT_FORMAT,
        version: EXPORT_VERSION,
        tenant_id: tenantId,
        from_seq: fromSeq,
        to_seq: toSeq,
        exported_at: new Date().toISOString(),
        hash: 'sha256(prev_hash + canonical record), see docs/audit.md "The canonical record"',
        signature: 'ed25519 over the canonical JSON of {at, hash, seq, tenant_id}',
      });
    }
    let records = 0;
    let checkpoints = 0;
    if (fromSeq !== null && toSeq !== null) {
      if (fromSeq > 1) {
        const [anchor] = await this.reader.checkpoints(tenantId, fromSeq - 1, fromSeq - 1, 1);
        if (anchor) {
          checkpoints++;
          yield line(exportedCheckpoint(anchor));
        }
      }
      let after = fromSeq - 1;
      let sizeHint = 0;
      while (after < toSeq) {
        const piece = await this.piece(tenantId, after, toSeq, eras, batchSize, line, sizeHint);
        if (!piece) break;
        records += piece.records;
        checkpoints += piece.checkpoints;
        after = piece.last;
        sizeHint = piece.bytes.length;
        yield piece.bytes;
      }
    }
    if (format === 'ndjson') yield line({ kind: 'end', records, checkpoints });
  }

  /**
   * One keyset batch, read and encoded to UTF-8 bytes. A function of its own so that nothing of the
   * batch (rows, parsed data, lines) is still referenced while the generator waits for the client
   * and reads the next batch; bytes rather than one ~850 KB string per batch, which V8 puts in its
   * large-object space and frees only in a full collection.
   */
  private async piece(
    tenantId: string,
    after: number,
    toSeq: number,
    eras: ChainEras,
    batchSize: number,
    line: (o: Record<string, unknown>) => string,
    sizeHint: number,
  ): Promise<{ bytes: Buffer; last: number; records: number; checkpoints: number } | null> {
    const batch = await this.reader.readChain(tenantId, after, toSeq, batchSize);
    if (batch.length === 0) return null;
    const last = batch[batch.length - 1].seq;
    const signed = new Map((await this.reader.checkpoints(tenantId, batch[0].seq, last, batch.length)).map((c) => [c.seq, c]));
    const out = new ByteWriter(sizeHint + (sizeHint >> 3)); // the last batch's size and some: mostly one allocation
    let checkpoints = 0;
    for (const r of batch) {
      out.put(line(exportedRecord(r, eras)));
      const c = signed.get(r.seq);
      if (c) {
        out.put(line(exportedCheckpoint(c)));
        checkpoints++;
      }
    }
    return { bytes: out.bytes(), last, records: batch.length, checkpoints };
  }
}

/** Appends strings as UTF-8 to one growing Buffer (off V8's heap, freed with the Buffer). */
class ByteWriter {
  private buf: Buffer;
  private size = 0;

  constructor(capacity: number) {
    this.buf = Buffer.allocUnsafeSlow(Math.max(64 * 1024, capacity));
  }

  put(text: string): void {
    const need = this.size + text.length * 3; // a UTF-16 code unit is at most 3 UTF-8 bytes
    if (need > this.buf.length) {
      const bigger = Buffer.allocUnsafeSlow(Math.max(this.buf.length * 2, need));
      this.buf.copy(bigger, 0, 0, this.size);
      this.buf = bigger;
    }
    this.size += this.buf.write(text, this.size);
  }

  bytes(): Buffer {
    return this.buf.subarray(0, this.size);
  }
}
