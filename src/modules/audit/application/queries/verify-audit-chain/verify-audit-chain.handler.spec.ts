import { Principal } from '../../../../../common/auth/principal';
import { AuditFilters, AuditPage, AuditReader } from '../../../domain/audit-reader';
import { AuditChainKey, AuditRecord, ChainHead, GENESIS_HASH, legacyAuditHash } from '../../../domain/audit-record';

const key = new AuditChainKey(Buffer.from('test-audit-key-'.repeat(3)));
import { VerifyAuditChainHandler } from './verify-audit-chain.handler';
import { VerifyAuditChainQuery } from './verify-audit-chain.query';

/** An in-memory reader that counts how many rows each chain read returned. */
class MemoryReader extends AuditReader {
  reads: number[] = [];
  constructor(
    public records: AuditRecord[],
    public headRow: ChainHead | null,
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

function chain(n: number, legacyUntil = 0): AuditRecord[] {
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
    const hash = body.seq <= legacyUntil ? legacyAuditHash(prev, body) : key.recordHash(prev, body);
    const r = { ...body, prevHash: prev, hash };
    prev = hash;
    return r;
  });
}

const admin: Principal = { tenantId: 't', subjectId: 'a', role: 'admin', keyId: 'k' };
/** The head a drain would have written after `rs` (tagged with the key). */
function headOf(rs: AuditRecord[], legacyUntil = 0): ChainHead {
  const head = { tenantId: 't', lastSeq: rs.length ? rs[rs.length - 1].seq : 0, lastHash: rs.length ? rs[rs.length - 1].hash : GENESIS_HASH, legacyUntil };
  return { ...head, tag: key.headTag(head) };
}

describe('VerifyAuditChainHandler', () => {
  it('walks the chain in bounded batches up to the head', async () => {
    const records = chain(23);
    const reader = new MemoryReader(records, headOf(records));
    await expect(new VerifyAuditChainHandler(reader, key).execute(new VerifyAuditChainQuery(admin, 10))).resolves.toEqual({ ok: true, checked: 23 });
    expect(reader.reads).toEqual([10, 10, 3]);
  });

  it('ignores records appended after the head was read', async () => {
    const records = chain(5);
    const reader = new MemoryReader(records, headOf(records.slice(0, 3)));
    await expect(new VerifyAuditChainHandler(reader, key).execute(new VerifyAuditChainQuery(admin, 2))).resolves.toEqual({ ok: true, checked: 3 });
  });

  it('is ok with no records and no head, broken with records but no head', async () => {
    await expect(new VerifyAuditChainHandler(new MemoryReader([], null), key).execute(new VerifyAuditChainQuery(admin))).resolves.toEqual({ ok: true, checked: 0 });
    const orphan = chain(1);
    await expect(new VerifyAuditChainHandler(new MemoryReader(orphan, null), key).execute(new VerifyAuditChainQuery(admin))).resolves.toEqual({
      ok: false,
      checked: 0,
      firstBroken: { id: 'aud_1', seq: 1, reason: 'chain_head_mismatch' },
    });
  });

  it('reports a tampered record in a later batch with the count checked before it', async () => {
    const records = chain(12);
    records[8] = { ...records[8], data: { i: 'changed' } };
    const reader = new MemoryReader(records, headOf(records));
    await expect(new VerifyAuditChainHandler(reader, key).execute(new VerifyAuditChainQuery(admin, 5))).resolves.toEqual({
      ok: false,
      checked: 8,
      firstBroken: { id: 'aud_9', seq: 9, reason: 'hash_mismatch' },
    });
  });

  it('reports a missing tail record and a head that does not match the last record', async () => {
    const records = chain(4);
    await expect(new VerifyAuditChainHandler(new MemoryReader(records.slice(0, 3), headOf(records)), key).execute(new VerifyAuditChainQuery(admin))).resolves.toEqual({
      ok: false,
      checked: 3,
      firstBroken: { id: null, seq: 4, reason: 'seq_gap' },
    });
    await expect(
      new VerifyAuditChainHandler(new MemoryReader(records, { ...headOf(records), lastHash: 'f'.repeat(64) }), key).execute(new VerifyAuditChainQuery(admin)),
    ).resolves.toEqual({ ok: false, checked: 4, firstBroken: { id: 'aud_4', seq: 4, reason: 'chain_head_mismatch' } });
  });

  it('reports a head rewound onto an earlier record without a tag for it (the tail deleted, the head moved back)', async () => {
    const records = chain(4);
    const rewound = { ...headOf(records), lastSeq: 3, lastHash: records[2].hash };
    await expect(new VerifyAuditChainHandler(new MemoryReader(records.slice(0, 3), rewound), key).execute(new VerifyAuditChainQuery(admin))).resolves.toEqual({
      ok: false,
      checked: 3,
      firstBroken: { id: 'aud_3', seq: 3, reason: 'chain_head_mismatch' },
    });
    // Retagged by someone with another key: the same.
    const other = new AuditChainKey(Buffer.from('another-key-'.repeat(3)));
    const retagged = { ...rewound, tag: other.headTag(rewound) };
    await expect(new VerifyAuditChainHandler(new MemoryReader(records.slice(0, 3), retagged), key).execute(new VerifyAuditChainQuery(admin))).resolves.toMatchObject({
      ok: false,
      firstBroken: { seq: 3, reason: 'chain_head_mismatch' },
    });
    // A head of seq 0 (all records deleted) needs its tag too.
    const emptied = { ...headOf([]), tag: other.headTag(headOf([])) };
    await expect(new VerifyAuditChainHandler(new MemoryReader([], emptied), key).execute(new VerifyAuditChainQuery(admin))).resolves.toEqual({
      ok: false,
      checked: 0,
      firstBroken: { id: null, seq: 0, reason: 'chain_head_mismatch' },
    });
  });

  it('verifies records of the old unkeyed scheme up to the legacy boundary the tagged head names', async () => {
    const records = chain(6, 4);
    await expect(new VerifyAuditChainHandler(new MemoryReader(records, headOf(records, 4)), key).execute(new VerifyAuditChainQuery(admin, 4))).resolves.toEqual({
      ok: true,
      checked: 6,
    });
    // Moving the boundary (to pass keyed records off as unkeyed ones) breaks the head's tag.
    const moved = { ...headOf(records, 4), legacyUntil: 6 };
    await expect(new VerifyAuditChainHandler(new MemoryReader(records, moved), key).execute(new VerifyAuditChainQuery(admin))).resolves.toMatchObject({
      ok: false,
      firstBroken: { seq: 5, reason: 'hash_mismatch' },
    });
  });

  it('refuses members', async () => {
    const member: Principal = { ...admin, role: 'member' };
    await expect(new VerifyAuditChainHandler(new MemoryReader([], null), key).execute(new VerifyAuditChainQuery(member))).rejects.toMatchObject({
      code: 'forbidden',
    });
  });
});
