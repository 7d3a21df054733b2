import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../../../common/config/app-config';
import { DbPriority } from '../../../common/database/db-priority';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { AuditRetention } from '../domain/audit-retention';

/** Records one `audit_prune` call deletes (one statement each: bounded locks and WAL per call). */
const PRUNE_BATCH = 10_000;
const PRUNE_EVERY_MS = 3_600_000;
const FIRST_PRUNE_AFTER_MS = 60_000;

/**
 * Retention on PostgreSQL. The service's role has no DELETE on `audit_records`: pruning goes
 * through `audit_prune` (SECURITY DEFINER, migration 1764498600000), which deletes only up to a
 * signed checkpoint made before the cutoff and never while the tenant is on legal hold; the
 * checkpoint stays and anchors the chain's new start (verify and offline verification start there).
 * With AUDIT_RETENTION_DAYS > 0 every node prunes hourly (the first time a minute after start);
 * nodes pruning at once delete disjoint or no rows.
 */
@Injectable()
export class AuditTypeormRetention extends AuditRetention implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('AuditRetention');
  private timer: NodeJS.Timeout | null = null;
  private interval: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly config: AppConfig,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    if (this.config.auditRetentionDays <= 0) return;
    const tick = () => {
      if (this.stopped || this.running) return;
      this.running = DbPriority.run('background', () => this.pruneAll(new Date(Date.now() - this.config.auditRetentionDays * 86_400_000)))
        .catch((err: Error) => this.logger.warn(`audit retention failed (retried in an hour): ${err.message}`))
        .finally(() => (this.running = null));
    };
    this.timer = setTimeout(() => {
      tick();
      this.interval = setInterval(tick, PRUNE_EVERY_MS);
      this.interval.unref();
    }, FIRST_PRUNE_AFTER_MS);
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.interval) clearInterval(this.interval);
    await Promise.race([this.running?.catch(() => undefined), new Promise((r) => setTimeout(r, 3000).unref())]);
  }

  async setLegalHold(tenantId: string, enabled: boolean, by: string): Promise<{ enabled: boolean; updatedAt: Date; updatedBy: string | null }> {
    const rows: Array<{ enabled: boolean; updated_at: Date; updated_by: string | null }> = await this.uow.manager.query(
      `INSERT INTO audit_legal_holds (tenant_id, enabled, updated_at, updated_by) VALUES ($1, $2, now(), $3)
       ON CONFLICT (tenant_id) DO UPDATE SET enabled = EXCLUDED.enabled, updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by
       RETURNING enabled, updated_at, updated_by`,
      [tenantId, enabled, by],
    );
    return { enabled: rows[0].enabled, updatedAt: new Date(rows[0].updated_at), updatedBy: rows[0].updated_by };
  }

  async pruneAll(cutoff: Date): Promise<void> {
    const tenants: Array<{ tenant_id: string }> = await this.uow.dataSource.query(`SELECT tenant_id FROM audit_chain_heads ORDER BY tenant_id LIMIT 10000`);
    for (const { tenant_id: tenant } of tenants) {
      if (this.stopped) return;
      const n = await this.pruneTenant(tenant, cutoff);
      if (n > 0) this.logger.log(`audit retention: tenant_id=${tenant} pruned ${n} records chained before ${cutoff.toISOString()}`);
    }
  }

  async pruneTenant(tenantId: string, cutoff: Date): Promise<number> {
    const held: Array<{ enabled: boolean }> = await this.uow.dataSource.query(`SELECT enabled FROM audit_legal_holds WHERE tenant_id = $1`, [tenantId]);
    if (held[0]?.enabled) return 0;
    // The newest checkpoint made before the cutoff: every record up to it was chained before then.
    const upto: Array<{ seq: string }> = await this.uow.dataSource.query(
      `SELECT c.seq FROM audit_checkpoints c WHERE c.tenant_id = $1 AND c.at < $2
          AND EXISTS (SELECT 1 FROM audit_records r WHERE r.tenant_id = c.tenant_id AND r.seq <= c.seq)
        ORDER BY c.seq DESC LIMIT 1`,
      [tenantId, cutoff],
    );
    if (!upto.length) return 0;
    let total = 0;
    for (;;) {
      const [row]: Array<{ n: string }> = await this.uow.dataSource.query(`SELECT audit_prune($1, $2, $3, $4) AS n`, [tenantId, upto[0].seq, cutoff, PRUNE_BATCH]);
      const n = Number(row.n);
      total += n;
      if (n < PRUNE_BATCH || this.stopped) return total;
    }
  }
}
