import { Principal } from '../../../../../common/auth/principal';
import { AuditFilters, AuditPage, AuditReader } from '../../../domain/audit-reader';
import { generateKeyPairSync } from 'node:crypto';
import { AuditCheckpoint, AuditPublicKey, AuditSigner } from '../../../domain/audit-checkpoint';
import { AuditChainKey, AuditRecord, auditRecordHash, ChainHead, GENESIS_HASH } from '../../../domain/audit-record';

const key = new AuditChainKey(Buffer.from('test-audit-key-'.repeat(3)));
const signer = new AuditSigner(generateKeyPairSync('ed25519').privateKey);
const stranger = new AuditSigner(generateKeyPairSync('ed25519').privateKey);
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
  signed: AuditCheckpoint[] = [];
  keys: AuditPublicKey[] = [{ keyId: signer.keyId, publicKeyPem: signer.publicKeyPem, createdAt: new Date(0) }];
  async byId(): Promise<null> {
    throw new Error('not used');
  }
  async firstSeq() {
    return this.records.length ? this.records[0].seq : null;
  }
  async seqRange(): Promise<null> {
    throw new Error('not used');
  }
  async checkpoints(_t: string, fromSeq: number, toSeq: number, limit: number) {
    return this.signed.filter((c) => c.seq >= fromSeq && c.seq <= toSeq).slice(0, limit);
  }
  async latestCheckpoint() {
    return this.signed[this.signed.length - 1] ?? null;
  }
  async publicKeys() {
    return this.keys;
  }
  async legalHold() {
    return { enabled: false, updatedAt: null, updatedBy: null };
  }
}

const checkpointAt = (r: AuditRecord, by = signer) => by.sign({ tenantId: 't', seq: r.seq, hash: r.hash, at: new Date(1_800_000_000_000) });

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
    const hash = auditRecordHash(prev, body);
    const r = { ...body, prevHash: prev, hash, mac: body.seq <= legacyUntil ? null : key.recordMac(hash) };
    prev = hash;
    return r;
  });
}

const admin: Principal = { tenantId: 't', subjectId: 'a', role: 'admin', keyId: 'k' };
/** The head a drain would have written after `rs` (tagged with the key). */
function headOf(rs: AuditRecord[], legacyUntil = 0): ChainHead {
  const head = { tenantId: 't', lastSeq: rs.length ? rs[rs.length - 1].seq : 0, lastHash: rs.length ? rs[rs.length - 1].hash : GENESIS_HASH, legacyUntil };
  return { ...head, keyedUntil: legacyUntil, tag: key.headTag(head) };
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
      firstBroken: { seq: 5, reason: 'mac_mismatch' },
    });
  });

  it('checks every signed checkpoint in the range: its hash is the record\'s and a listed key signed it', async () => {
    const records = chain(12);
    const run = (reader: MemoryReader) => new VerifyAuditChainHandler(reader, key).execute(new VerifyAuditChainQuery(admin, 5));
    const intact = new MemoryReader(records, headOf(records));
    intact.signed = [checkpointAt(records[3]), checkpointAt(records[9])];
    await expect(run(intact)).resolves.toEqual({ ok: true, checked: 12 });
    const moved = new MemoryReader(records, headOf(records));
    moved.signed = [checkpointAt(records[3]), { ...checkpointAt(records[9]), hash: records[8].hash }];
    await expect(run(moved)).resolves.toEqual({ ok: false, checked: 9, firstBroken: { id: 'aud_10', seq: 10, reason: 'checkpoint_mismatch' } });
    const unlisted = new MemoryReader(records, headOf(records));
    unlisted.signed = [checkpointAt(records[3], stranger)];
    await expect(run(unlisted)).resolves.toEqual({ ok: false, checked: 3, firstBroken: { id: 'aud_4', seq: 4, reason: 'checkpoint_signature_invalid' } });
  });

  it('starts a pruned chain at the signed checkpoint before its first record, and names an unanchored start', async () => {
    const records = chain(10);
    const pruned = new MemoryReader(records.slice(4), headOf(records));
    pruned.signed = [checkpointAt(records[3])];
    await expect(new VerifyAuditChainHandler(pruned, key).execute(new VerifyAuditChainQuery(admin, 3))).resolves.toEqual({ ok: true, checked: 6 });
    const cut = new MemoryReader(records.slice(5), headOf(records));
    cut.signed = [checkpointAt(records[3])];
    await expect(new VerifyAuditChainHandler(cut, key).execute(new VerifyAuditChainQuery(admin))).resolves.toEqual({
      ok: false,
      checked: 0,
      firstBroken: { id: 'aud_6', seq: 6, reason: 'chain_start_unanchored' },
    });
  });

  it('refuses members', async () => {
    const member: Principal = { ...admin, role: 'member' };
    await expect(new VerifyAuditChainHandler(new MemoryReader([], null), key).execute(new VerifyAuditChainQuery(member))).rejects.toMatchObject({
      code: 'forbidden',
    });
  });
});
