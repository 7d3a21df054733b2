import { Principal } from '../../../../../common/auth/principal';
import { AuditCheckpoint } from '../../../domain/audit-checkpoint';
import { AuditCheckpointer } from '../../../domain/audit-checkpointer';
import { csvRow, exportedCheckpoint, exportedRecord } from '../../../domain/audit-export';
import { AuditReader } from '../../../domain/audit-reader';
import { AuditRecord, ChainEras, ChainHead } from '../../../domain/audit-record';
import { ExportAuditTrailHandler } from './export-audit-trail.handler';
import { ExportAuditTrailQuery } from './export-audit-trail.query';

/** Records with multi-byte text of varying size: UTF-8 lengths differ from string lengths, and some lines are far above a batch's first buffer. */
function records(n: number): AuditRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `aud_${i + 1}`,
    tenantId: 't',
    seq: i + 1,
    occurredAt: new Date(1_700_000_000_000 + i * 1000),
    actorSubjectId: 'u',
    actorRole: 'member',
    actorKeyId: 'k',
    action: 'POST /v1/sessions/:id/runs',
    resourceType: 'run',
    resourceId: `run_${i}`,
    sessionId: null,
    runId: `run_${i}`,
    requestId: `req_${i}`,
    outcome: 'ok',
    status: 202,
    data: { note: `Grüße, "${i}", 🚚 €`.repeat(i % 97 === 0 ? 4000 : 1 + (i % 5)), n: i },
    prevHash: 'p'.repeat(64),
    hash: String(i).padStart(64, '0'),
    mac: 'm'.repeat(64),
  }));
}

class MemoryReader {
  reads = 0;
  constructor(
    private readonly rs: AuditRecord[],
    private readonly signed: AuditCheckpoint[],
  ) {}
  async head(): Promise<ChainHead> {
    return { tenantId: 't', lastSeq: this.rs.length, lastHash: this.rs[this.rs.length - 1].hash, legacyUntil: 0, keyedUntil: 0, tag: 'x' };
  }
  async seqRange() {
    return { first: 1, last: this.rs.length };
  }
  async readChain(_t: string, after: number, upto: number, limit: number) {
    this.reads++;
    return this.rs.filter((r) => r.seq > after && r.seq <= upto).slice(0, limit);
  }
  async checkpoints(_t: string, from: number, to: number, limit: number) {
    return this.signed.filter((c) => c.seq >= from && c.seq <= to).slice(0, limit);
  }
}

const admin: Principal = { tenantId: 't', subjectId: 'a', role: 'admin', keyId: 'k' };
const eras: ChainEras = { legacyUntil: 0, keyedUntil: 0 };

async function body(chunks: AsyncIterable<string | Buffer>): Promise<string> {
  const parts: Buffer[] = [];
  for await (const c of chunks) parts.push(typeof c === 'string' ? Buffer.from(c, 'utf8') : c);
  return Buffer.concat(parts).toString('utf8');
}

describe('ExportAuditTrailHandler', () => {
  const rs = records(1234);
  const signed: AuditCheckpoint[] = [100, 1000, 1234].map((seq) => ({
    tenantId: 't',
    seq,
    hash: rs[seq - 1].hash,
    at: new Date(1_800_000_000_000),
    keyId: 'key1',
    signature: 'sig',
  }));
  const handler = (reader: MemoryReader) => new ExportAuditTrailHandler(reader as unknown as AuditReader, {} as AuditCheckpointer);
  const to = new Date(2_000_000_000_000);

  it('streams every record as UTF-8 in keyset batches, each checkpoint after its record, byte for byte what JSON.stringify gives', async () => {
    const reader = new MemoryReader(rs, signed);
    const out = await handler(reader).execute(new ExportAuditTrailQuery(admin, { to }, 'ndjson', 100));
    const lines = (await body(out.chunks)).split('\n');
    expect(lines.pop()).toBe('');
    expect(JSON.parse(lines[0])).toMatchObject({ kind: 'header', from_seq: 1, to_seq: 1234 });
    const expected: string[] = [];
    for (const r of rs) {
      expected.push(JSON.stringify(exportedRecord(r, eras)));
      const c = signed.find((s) => s.seq === r.seq);
      if (c) expected.push(JSON.stringify(exportedCheckpoint(c)));
    }
    expect(lines.slice(1, -1)).toEqual(expected);
    expect(JSON.parse(lines[lines.length - 1])).toEqual({ kind: 'end', records: 1234, checkpoints: 3 });
    expect(reader.reads).toBe(13);
  });

  it('writes the same bytes as csv rows', async () => {
    const out = await handler(new MemoryReader(rs, signed)).execute(new ExportAuditTrailQuery(admin, { to }, 'csv', 333));
    const text = await body(out.chunks);
    const rows = rs.flatMap((r) => {
      const c = signed.find((s) => s.seq === r.seq);
      return c ? [csvRow(exportedRecord(r, eras)), csvRow(exportedCheckpoint(c))] : [csvRow(exportedRecord(r, eras))];
    });
    expect(text.slice(text.indexOf('\r\n') + 2)).toBe(rows.join(''));
  });
});
