import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { DomainError } from '../../../../../common/errors/domain-error';
import { AuditReader } from '../../../domain/audit-reader';
import { AuditChainKey, GENESIS_HASH, verifyBatch } from '../../../domain/audit-record';
import { ChainVerification, VerifyAuditChainQuery } from './verify-audit-chain.query';

/**
 * Reads the chain head first and verifies the records up to it (records appended meanwhile are
 * left for the next run), in batches of `batchSize` rows, each its own bounded query: memory
 * stays flat however long the chain is. Checks, per record: `seq` is the previous one + 1,
 * `prev_hash` is the previous `hash` (64 zeros for seq 1), `hash` recomputes with the chain's key
 * (HMAC-SHA256; unkeyed SHA-256 only up to the head's `legacy_until`); at the end the last record
 * is the head and the head's tag is the key's (catches a truncated tail and a rewound head). The
 * first failure is reported, a record before the head.
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
    let link = { seq: 0, hash: GENESIS_HASH };
    let lastId: string | null = null;
    let checked = 0;
    while (link.seq < head.lastSeq) {
      const batch = await this.reader.readChain(tenantId, link.seq, head.lastSeq, batchSize);
      if (batch.length === 0) break;
      const result = verifyBatch(this.key, head.legacyUntil, link, batch);
      if (!result.ok) return { ok: false, checked: checked + result.checked, firstBroken: result.broken };
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
}
