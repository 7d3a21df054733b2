import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { AppConfig } from '../../../common/config/app-config';
import { DbPriority } from '../../../common/database/db-priority';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { Metrics } from '../../../common/metrics/metrics';
import { AuditSigner } from '../domain/audit-checkpoint';
import { AuditCheckpointer, CheckpointOutcome } from '../domain/audit-checkpointer';
import { AuditChainKey, ChainBreak, GENESIS_HASH, verifyInSlices } from '../domain/audit-record';
import { AUDIT_COLUMNS, AuditRow, auditRowToDomain } from './audit-row';
import { CheckpointRow, checkpointRowToDomain } from './audit.typeorm-reader';

/** Records read per query while the checkpointer checks what it is about to sign. */
const VERIFY_BATCH = 1000;
/** The time sweep runs at least this often (and at most every AUDIT_CHECKPOINT_MS / 4). */
const SWEEP_MAX_MS = 15_000;
const SWEEP_MIN_MS = 25;

/**
 * Signs tenants' chain heads (CONTRACT section 10): when a drain moved a head AUDIT_CHECKPOINT_EVERY
 * records past the last checkpoint, and from a sweep when records were chained and the last
 * checkpoint is AUDIT_CHECKPOINT_MS old. Before signing it re-reads every record since the last
 * checkpoint from the database and checks seq, prev_hash, hash and mac (and the head's tag): a
 * record rewritten since (by someone without AUDIT_HMAC_KEY) is refused (error log, metric
 * `agent_api_audit_checkpoints_total{outcome="refused"}`), never signed.
 *
 * Multi-node: a transaction-scoped advisory lock per tenant serialises checkpointers (the drain is
 * not blocked: it locks the head row, not this), and the primary key (tenant_id, seq) keeps one
 * checkpoint per position whatever happens (`ON CONFLICT DO NOTHING`).
 */
@Injectable()
export class AuditTypeormCheckpointer extends AuditCheckpointer implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('AuditCheckpoints');
  /** Last signed position per tenant known to this node (a hint: the database decides). */
  private readonly signedUpTo = new Map<string, number>();
  private readonly pending = new Set<string>();
  /** Tenants whose last attempt was refused: the background tries them again only after AUDIT_CHECKPOINT_MS (each attempt re-reads everything since the last checkpoint). */
  private readonly refusedAt = new Map<string, number>();
  private running: Promise<void> | null = null;
  private sweepTimer: NodeJS.Timeout | null = null;
  private stopped = false;
  private keyRegistered: Promise<void> | null = null;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly key: AuditChainKey,
    private readonly signer: AuditSigner,
    private readonly config: AppConfig,
    @Optional() private readonly metrics?: Metrics,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    this.keyRegistered = this.registerKey().catch((err: Error) => {
      this.keyRegistered = null;
      this.logger.warn(`the audit signing key was not listed yet (retried before the next checkpoint): ${err.message}`);
    });
    const every = Math.max(SWEEP_MIN_MS, Math.min(Math.floor(this.config.auditCheckpointMs / 4), SWEEP_MAX_MS));
    this.sweepTimer = setInterval(() => this.sweepSoon(), every);
    this.sweepTimer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    await Promise.race([this.running?.catch(() => undefined), new Promise((r) => setTimeout(r, 3000).unref())]);
  }

  /** Called by the trail after it moved a tenant's head to `lastSeq`: signs in the background when a count slot is full. */
  noteChained(tenantId: string, lastSeq: number): void {
    const signed = this.signedUpTo.get(tenantId);
    if (signed !== undefined && lastSeq - signed < this.config.auditCheckpointEvery) return;
    if (this.recentlyRefused(tenantId)) return;
    this.pending.add(tenantId);
    this.runSoon();
  }

  /**
   * Signs the tenant's current head now if it is due (`force`: whenever it is past the last
   * checkpoint). Tests, the export and the retention job call it; the background calls it too.
   */
  async checkpoint(tenantId: string, force = false): Promise<CheckpointOutcome> {
    await this.ensureKeyListed();
    const result = await this.uow.dataSource.transaction((m) => this.checkpointIn(m, tenantId, force));
    if (result.outcome === 'signed') {
      this.refusedAt.delete(tenantId);
      this.signedUpTo.set(tenantId, result.checkpoint.seq);
      this.metrics?.recordAuditCheckpoint('signed');
    } else if (result.outcome === 'refused') {
      this.refusedAt.set(tenantId, Date.now());
      this.metrics?.recordAuditCheckpoint('refused');
      this.logger.error(
        `audit checkpoint of tenant ${tenantId} refused: record seq ${result.broken.seq} (${result.broken.id ?? 'missing'}) fails with ${result.broken.reason} ` +
          'since the last checkpoint; nothing was signed (the trail was changed without AUDIT_HMAC_KEY, or nodes use different keys)',
      );
    }
    return result;
  }

  /** Signs every tenant whose unsigned records are AUDIT_CHECKPOINT_MS old (or AUDIT_CHECKPOINT_EVERY many). */
  async sweep(): Promise<void> {
    const rows: Array<{ tenant_id: string }> = await this.uow.dataSource.query(
      `SELECT h.tenant_id FROM audit_chain_heads h
         LEFT JOIN LATERAL (SELECT c.seq, c.at FROM audit_checkpoints c WHERE c.tenant_id = h.tenant_id ORDER BY c.seq DESC LIMIT 1) c ON true
        WHERE h.last_seq > COALESCE(c.seq, 0)
          AND (c.at IS NULL OR c.at <= now() - make_interval(secs => $1::double precision / 1000) OR h.last_seq - c.seq >= $2)
        ORDER BY h.tenant_id LIMIT 1000`,
      [this.config.auditCheckpointMs, this.config.auditCheckpointEvery],
    );
    for (const { tenant_id: tenant } of rows) {
      if (this.stopped) return;
      if (this.recentlyRefused(tenant)) continue;
      await this.checkpoint(tenant, true);
    }
  }

  private recentlyRefused(tenantId: string): boolean {
    return Date.now() - (this.refusedAt.get(tenantId) ?? 0) < this.config.auditCheckpointMs;
  }

  private sweepSoon(): void {
    if (this.stopped || this.running) return;
    this.running = DbPriority.run('background', () => this.sweep())
      .catch((err: Error) => this.logger.warn(`audit checkpoint sweep failed (retried at the next one): ${err.message}`))
      .finally(() => {
        this.running = null;
        if (this.pending.size) this.runSoon();
      });
  }

  private runSoon(): void {
    if (this.stopped || this.running) return;
    this.running = DbPriority.run('background', async () => {
      while (this.pending.size && !this.stopped) {
        const [tenant] = this.pending;
        this.pending.delete(tenant);
        await this.checkpoint(tenant, false);
      }
    })
      .catch((err: Error) => this.logger.warn(`audit checkpoint failed (retried at the next sweep): ${err.message}`))
      .finally(() => {
        this.running = null;
        if (this.pending.size) this.runSoon();
      });
  }

  private async checkpointIn(m: EntityManager, tenantId: string, force: boolean): Promise<CheckpointOutcome> {
    await m.query(`SELECT pg_advisory_xact_lock(hashtextextended('audit_checkpoint:' || $1, 0))`, [tenantId]);
    const heads: Array<{ last_seq: string; last_hash: string; legacy_until: string; keyed_until: string; tag: string }> = await m.query(
      `SELECT last_seq, last_hash, legacy_until, keyed_until, tag FROM audit_chain_heads WHERE tenant_id = $1`,
      [tenantId],
    );
    if (!heads.length) return { outcome: 'not_due' };
    const head = {
      tenantId,
      lastSeq: Number(heads[0].last_seq),
      lastHash: heads[0].last_hash,
      legacyUntil: Number(heads[0].legacy_until),
      keyedUntil: Number(heads[0].keyed_until),
      tag: heads[0].tag,
    };
    const last: CheckpointRow[] = await m.query(
      `SELECT tenant_id, seq, hash, at, key_id, signature FROM audit_checkpoints WHERE tenant_id = $1 ORDER BY seq DESC LIMIT 1`,
      [tenantId],
    );
    const previous = last.length ? checkpointRowToDomain(last[0]) : null;
    const from = previous ? { seq: previous.seq, hash: previous.hash } : { seq: 0, hash: GENESIS_HASH };
    if (previous) this.signedUpTo.set(tenantId, previous.seq);
    if (head.lastSeq <= from.seq) return { outcome: 'not_due' };
    if (!force && head.lastSeq - from.seq < this.config.auditCheckpointEvery) return { outcome: 'not_due' };
    if (!this.key.headIsAuthentic(head)) return { outcome: 'refused', broken: { id: null, seq: head.lastSeq, reason: 'chain_head_mismatch' } };
    // Everything since the last signed position is read back and checked before it is vouched for.
    let link = from;
    while (link.seq < head.lastSeq) {
      const rows: AuditRow[] = await m.query(
        `SELECT ${AUDIT_COLUMNS} FROM audit_records WHERE tenant_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq ASC LIMIT $4`,
        [tenantId, link.seq, head.lastSeq, VERIFY_BATCH],
      );
      if (!rows.length) return { outcome: 'refused', broken: { id: null, seq: link.seq + 1, reason: 'seq_gap' } };
      // In slices with the event loop turning between them: requests are not held up.
      const checked = await verifyInSlices(this.key, head, link, rows.map(auditRowToDomain));
      if (!checked.ok) return { outcome: 'refused', broken: checked.broken };
      link = checked.last;
    }
    if (link.hash !== head.lastHash) return { outcome: 'refused', broken: { id: null, seq: head.lastSeq, reason: 'chain_head_mismatch' } };
    const checkpoint = this.signer.sign({ tenantId, seq: head.lastSeq, hash: head.lastHash, at: new Date() });
    const inserted: Array<{ seq: string }> = await m.query(
      `INSERT INTO audit_checkpoints (tenant_id, seq, hash, at, key_id, signature) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (tenant_id, seq) DO NOTHING RETURNING seq`,
      [tenantId, checkpoint.seq, checkpoint.hash, checkpoint.at, checkpoint.keyId, checkpoint.signature],
    );
    return inserted.length ? { outcome: 'signed', checkpoint } : { outcome: 'not_due' };
  }

  private ensureKeyListed(): Promise<void> {
    if (!this.keyRegistered) {
      this.keyRegistered = this.registerKey().catch((err: Error) => {
        this.keyRegistered = null;
        throw err;
      });
    }
    return this.keyRegistered;
  }

  /** Lists this node's public key (a rotation adds the new one; the old ones stay listed). */
  private async registerKey(): Promise<void> {
    await this.uow.dataSource.query(`INSERT INTO audit_signing_keys (key_id, public_key) VALUES ($1, $2) ON CONFLICT (key_id) DO NOTHING`, [
      this.signer.keyId,
      this.signer.publicKeyPem,
    ]);
  }
}
