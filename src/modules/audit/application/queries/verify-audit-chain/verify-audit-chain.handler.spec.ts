import { Principal } from '../../../../../common/auth/principal';
import { AuditFilters, AuditPage, AuditReader } from '../../../domain/audit-reader';
import { AuditRecord, auditHash, GENESIS_HASH } from '../../../domain/audit-record';
import { VerifyAuditChainHandler } from './verify-audit-chain.handler';
import { VerifyAuditChainQuery } from './verify-audit-chain.query';

/** An in-memory reader that counts how many rows each chain read returned. */
class MemoryReader extends AuditReader {
  reads: number[] = [];
  constructor(
    public records: AuditRecord[],
    public headRow: { lastSeq: number; lastHash: string } | null,
  ) {
    super();
  }
  list(_t: string, _f: AuditFilters, _p: AuditPage): Promise<{ items: AuditRecord[]; hasMore: boolean }> {
    throw new Error('not used');
  }
  async readChain(_t: string, afterSeq: number, uptoSeq: number, limit: number): Promise<AuditRecord[]> {
    const rows = this.records.filter((r) => r.seq > afterSeq && r.seq <= uptoSeq).slice(0, limit);
    this.reads.push(rows.length);
    return rows;
  }
  async head() {
    return this.headRow;
  }
}

function chain(n: number): AuditRecord[] {
  let prev = GENESIS_HASH;
  return Array.from({ length: n }, (_, i) => {
    const body = {
      id: `aud_${i + 1}`,
      tenantId: 't',
      seq: i + 1,
      occurredAt: new Date(1_700_000_000_000 + i),
      actorSubjectId: 'u',
      actorRole: 'member',
      actorKeyId: 'k',
      action: 'POST /v1/sessions',
      resourceType: 'session',
      resourceId: `sess_${i}`,
      sessionId: `sess_${i}`,
      runId: null,
      requestId: `req_${i}`,
      outcome: 'ok',
      status: 201,
      data: { i },
    };
    const hash = auditHash(prev, body);
    const r = { ...body, prevHash: prev, hash };
    prev = hash;
    return r;
  });
}

const admin: Principal = { tenantId: 't', subjectId: 'a', role: 'admin', keyId: 'k' };
const headOf = (rs: AuditRecord[]) => ({ lastSeq: rs[rs.length - 1].seq, lastHash: rs[rs.length - 1].hash });

describe('VerifyAuditChainHandler', () => {
  it('walks the chain in bounded batches up to the head', async () => {
    const records = chain(23);
    const reader = new MemoryReader(records, headOf(records));
    await expect(new VerifyAuditChainHandler(reader).execute(new VerifyAuditChainQuery(admin, 10))).resolves.toEqual({ ok: true, checked: 23 });
    expect(reader.reads).toEqual([10, 10, 3]);
  });

  it('ignores records appended after the head was read', async () => {
    const records = chain(5);
    const reader = new MemoryReader(records, headOf(records.slice(0, 3)));
    await expect(new VerifyAuditChainHandler(reader).execute(new VerifyAuditChainQuery(admin, 2))).resolves.toEqual({ ok: true, checked: 3 });
  });

  it('is ok with no records and no head, broken with records but no head', async () => {
    await expect(new VerifyAuditChainHandler(new MemoryReader([], null)).execute(new VerifyAuditChainQuery(admin))).resolves.toEqual({ ok: true, checked: 0 });
    const orphan = chain(1);
    await expect(new VerifyAuditChainHandler(new MemoryReader(orphan, null)).execute(new VerifyAuditChainQuery(admin))).resolves.toEqual({
      ok: false,
      checked: 0,
      firstBroken: { id: 'aud_1', seq: 1, reason: 'chain_head_mismatch' },
    });
  });

  it('reports a tampered record in a later batch with the count checked before it', async () => {
    const records = chain(12);
    records[8] = { ...records[8], data: { i: 'changed' } };
    const reader = new MemoryReader(records, headOf(records));
    await expect(new VerifyAuditChainHandler(reader).execute(new VerifyAuditChainQuery(admin, 5))).resolves.toEqual({
      ok: false,
      checked: 8,
      firstBroken: { id: 'aud_9', seq: 9, reason: 'hash_mismatch' },
    });
  });

  it('reports a missing tail record and a head that does not match the last record', async () => {
    const records = chain(4);
    await expect(new VerifyAuditChainHandler(new MemoryReader(records.slice(0, 3), headOf(records))).execute(new VerifyAuditChainQuery(admin))).resolves.toEqual({
      ok: false,
      checked: 3,
      firstBroken: { id: null, seq: 4, reason: 'seq_gap' },
    });
    await expect(
      new VerifyAuditChainHandler(new MemoryReader(records, { lastSeq: 4, lastHash: 'f'.repeat(64) })).execute(new VerifyAuditChainQuery(admin)),
    ).resolves.toEqual({ ok: false, checked: 4, firstBroken: { id: 'aud_4', seq: 4, reason: 'chain_head_mismatch' } });
  });

  it('refuses members', async () => {
    const member: Principal = { ...admin, role: 'member' };
    await expect(new VerifyAuditChainHandler(new MemoryReader([], null)).execute(new VerifyAuditChainQuery(member))).rejects.toMatchObject({
      code: 'forbidden',
    });
  });
});
