import { KeyObject } from 'node:crypto';
import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { DomainError } from '../../../../../common/errors/domain-error';
import { AuditCheckpoint, checkpointSignatureValid, parsePublicKey } from '../../../domain/audit-checkpoint';
import { AuditReader } from '../../../domain/audit-reader';
import { AuditChainKey, AuditRecord, ChainBreak, GENESIS_HASH, verifyInSlices } from '../../../domain/audit-record';
import { ChainVerification, VerifyAuditChainQuery } from './verify-audit-chain.query';

/**
 * Reads the chain head first and verifies the records up to it (records appended meanwhile are
 * left for the next run), in batches of `batchSize` rows, each its own bounded query: memory
 * stays flat however long the chain is. Checks, per record: `seq` is the previous one + 1,
 * `prev_hash` is the previous `hash` (64 zeros for seq 1), `hash` recomputes and `mac` is the
 * key's (as the record's era has them, see `canonicalAuditRecord`); per signed checkpoint in the
 * range: its hash is the record's at its seq and its signature verifies with a listed public key.
 * A pruned chain starts after a signed checkpoint whose hash is the first record's `prev_hash`.
 * At the end the last record is the head and the head's tag is the key's (catches a truncated
 * tail and a rewound head). The first failure is reported.
 */
@QueryHandler(VerifyAuditChainQuery)
export class VerifyAuditChainHandler implements IQueryHandler<VerifyAuditChainQuery> {
  constructor(
    private readonly reader: AuditReader,
    private readonly key: AuditChainKey,
  ) {}

  async execute({ principal, batchSize }: VerifyAuditChainQuery): Promise<ChainVerification> {
    if (principal.role !== 'admin') throw new DomainError('forbidden', 'the audit trail needs an admin API key');
    const tenantId = principal.tenantId;
    const head = await this.reader.head(tenantId);
    if (!head) {
      const [orphan] = await this.reader.readChain(tenantId, 0, Number.MAX_SAFE_INTEGER, 1);
      if (orphan) return { ok: false, checked: 0, firstBroken: { id: orphan.id, seq: orphan.seq, reason: 'chain_head_mismatch' } };
      return { ok: true, checked: 0 };
    }
    const keys = await this.publicKeys();
    let link = { seq: 0, hash: GENESIS_HASH };
    const first = await this.reader.firstSeq(tenantId);
    if (first !== null && first > 1) {
      // Pruned: the chain starts at a signed checkpoint (the one the prune stopped at).
      const [anchor] = await this.reader.checkpoints(tenantId, first - 1, first - 1, 1);
      const [firstRecord] = await this.reader.readChain(tenantId, first - 1, first, 1);
      if (!anchor || !signatureValid(keys, anchor) || anchor.hash !== firstRecord?.prevHash) {
        return { ok: false, checked: 0, firstBroken: { id: firstRecord?.id ?? null, seq: first, reason: 'chain_start_unanchored' } };
      }
      link = { seq: anchor.seq, hash: anchor.hash };
    }
    let lastId: string | null = null;
    let checked = 0;
    while (link.seq < head.lastSeq) {
      const batch = await this.reader.readChain(tenantId, link.seq, head.lastSeq, batchSize);
      if (batch.length === 0) break;
      // In slices with the event loop turning between them (other requests are not held up).
      const result = await verifyInSlices(this.key, head, link, batch);
      if (!result.ok) return { ok: false, checked: checked + result.checked, firstBroken: result.broken };
      const signed = await this.reader.checkpoints(tenantId, batch[0].seq, batch[batch.length - 1].seq, batch.length);
      const broken = checkpointsBreak(keys, batch, signed);
      if (broken) return { ok: false, checked: checked + broken.checked, firstBroken: broken.broken };
      checked += batch.length;
      link = result.last;
      lastId = batch[batch.length - 1].id;
    }
    if (link.seq !== head.lastSeq) return { ok: false, checked, firstBroken: { id: null, seq: link.seq + 1, reason: 'seq_gap' } };
    if (link.hash !== head.lastHash || !this.key.headIsAuthentic(head)) {
      return { ok: false, checked, firstBroken: { id: lastId, seq: link.seq, reason: 'chain_head_mismatch' } };
    }
    return { ok: true, checked };
  }

  private async publicKeys(): Promise<Map<string, KeyObject>> {
    const keys = new Map<string, KeyObject>();
    for (const k of await this.reader.publicKeys()) {
      try {
        keys.set(k.keyId, parsePublicKey(k.publicKeyPem));
      } catch {
        // An unparsable listed key verifies nothing: its checkpoints fail below.
      }
    }
    return keys;
  }
}

function signatureValid(keys: Map<string, KeyObject>, c: AuditCheckpoint): boolean {
  const key = keys.get(c.keyId);
  return key !== undefined && checkpointSignatureValid(key, c);
}

/** The first checkpoint of the batch's range that does not vouch for its record, or null. */
function checkpointsBreak(keys: Map<string, KeyObject>, batch: AuditRecord[], signed: AuditCheckpoint[]): { broken: ChainBreak; checked: number } | null {
  const first = batch[0].seq;
  for (const c of signed) {
    const record = batch[c.seq - first];
    if (record.hash !== c.hash) return { broken: { id: record.id, seq: c.seq, reason: 'checkpoint_mismatch' }, checked: c.seq - first };
    if (!signatureValid(keys, c)) return { broken: { id: record.id, seq: c.seq, reason: 'checkpoint_signature_invalid' }, checked: c.seq - first };
  }
  return null;
}
