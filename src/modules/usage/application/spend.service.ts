import { Injectable } from '@nestjs/common';
import { addAmounts, compareAmounts } from '../domain/money';
import { Clock } from '../../../common/clock/clock';
import { quotaExceeded, SpendCheck, SpendGate, SpendLimit, windowOf } from '../domain/spend';
import { SpendRepository } from '../domain/spend.repository';

/** How long a tenant's limit (or its absence) is remembered: a limit set on another node applies within this. */
const LIMIT_CACHE_MS = 1000;

/**
 * The usage module's two ports: the ledger runs report model calls to, and the gate that refuses
 * new runs over the tenant's spend limit. The gate reads the limit through a short cache (no
 * statement per run for tenants without one) and sums the window's spend only when there is one.
 */
@Injectable()
export class SpendService implements SpendGate {
  private readonly limits = new Map<string, { limit: SpendLimit | null; until: number }>();

  constructor(
    private readonly repo: SpendRepository,
    private readonly clock: Clock,
  ) {}

  async assertWithinLimit(tenantId: string): Promise<void> {
    const over = await this.over(tenantId);
    if (over) throw quotaExceeded(over.limit, over.spent, over.resetsAt);
  }

  async check(tenantId: string): Promise<SpendCheck> {
    const limit = await this.limitOf(tenantId);
    if (!limit) return { exceeded: false };
    const { start, resetsAt } = windowOf(limit.window, this.clock.date());
    const [spent, reserved] = await Promise.all([this.repo.spentSince(tenantId, start), this.repo.reservedBy(tenantId)]);
    if (compareAmounts(addAmounts(spent, reserved), limit.amount) < 0) return { exceeded: false };
    return { exceeded: true, resetsAt, details: quotaExceeded(limit, spent, resetsAt, reserved).details ?? {} };
  }

  async hasLimit(tenantId: string): Promise<boolean> {
    return (await this.limitOf(tenantId)) !== null;
  }

  async reserve(tenantId: string, call: { runId: string; messageId: string; amount: string; ttlMs: number }): Promise<SpendCheck & { reserved: boolean }> {
    if (!(await this.limitOf(tenantId))) return { exceeded: false, reserved: false };
    const now = this.clock.date();
    // The limit as read under its lock (one changed meanwhile applies at once), its window as of now.
    const out = await this.repo.reserve(tenantId, { ...call, now });
    if (!out) return { exceeded: false, reserved: false };
    const { resetsAt } = windowOf(out.limit.window, now);
    if (out.reserved) return { exceeded: false, reserved: true };
    return { exceeded: true, reserved: false, resetsAt, details: quotaExceeded(out.limit, out.spent, resetsAt, out.reservedByOthers).details ?? {} };
  }

  extend(runId: string, ttlMs: number): Promise<void> {
    return this.repo.extendReservation(runId, ttlMs);
  }

  release(runId: string, messageId: string): Promise<void> {
    return this.repo.releaseReservation(runId, messageId);
  }

  /** The limit, the window's spend and its reset when the tenant is at or over its limit; null otherwise. */
  private async over(tenantId: string): Promise<{ limit: SpendLimit; spent: string; resetsAt: Date } | null> {
    const limit = await this.limitOf(tenantId);
    if (!limit) return null;
    const { start, resetsAt } = windowOf(limit.window, this.clock.date());
    const spent = await this.repo.spentSince(tenantId, start);
    return compareAmounts(spent, limit.amount) >= 0 ? { limit, spent, resetsAt } : null;
  }

  /** A limit changed on this node applies at once. */
  forget(tenantId: string): void {
    this.limits.delete(tenantId);
  }

  private async limitOf(tenantId: string): Promise<SpendLimit | null> {
    const hit = this.limits.get(tenantId);
    if (hit && hit.until > Date.now()) return hit.limit;
    const limit = await this.repo.findLimit(tenantId);
    if (this.limits.size > 10_000) this.limits.clear();
    this.limits.set(tenantId, { limit, until: Date.now() + LIMIT_CACHE_MS });
    return limit;
  }
}
