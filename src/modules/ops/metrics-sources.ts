import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { AppConfig } from '../../common/config/app-config';
import { Metrics } from '../../common/metrics/metrics';
import { SseStreamsService } from '../events/api/sse-streams.service';
import { ACTIVE_STATUSES } from '../runs/domain/run-status';

/** A scrape never waits on the database longer than this; on timeout the gauges keep their last value. */
export const SCRAPE_QUERY_TIMEOUT_MS = 1000;
/** At most this many rows are counted per scrape (bounded even with a huge backlog). */
export const SCRAPE_ROW_BOUND = 100_000;

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms).unref())]);
}

/** Feeds the scrape-time gauges: open SSE streams (memory), runs by status and leases held (bounded queries). */
@Injectable()
export class MetricsSources implements OnApplicationBootstrap {
  private readonly logger = new Logger('Metrics');

  constructor(
    private readonly metrics: Metrics,
    private readonly dataSource: DataSource,
    private readonly config: AppConfig,
    private readonly moduleRef: ModuleRef,
  ) {}

  onApplicationBootstrap(): void {
    let streams: SseStreamsService | null = null;
    try {
      streams = this.moduleRef.get(SseStreamsService, { strict: false });
    } catch {
      streams = null;
    }
    this.metrics.setSources({
      openStreams: () => streams?.count ?? 0,
      runsByStatus: () => this.guard('runs by status', () => this.runsByStatus()),
      leasesHeld: () => this.guard('leases held', () => this.leasesHeld()),
    });
  }

  async runsByStatus(): Promise<Record<string, number>> {
    const rows: Array<{ status: string; n: string }> = await this.dataSource.query(
      `SELECT status, count(*) AS n FROM (SELECT status FROM runs WHERE status = ANY($1::text[]) LIMIT $2) r GROUP BY status`,
      [ACTIVE_STATUSES, SCRAPE_ROW_BOUND],
    );
    const out: Record<string, number> = Object.fromEntries(ACTIVE_STATUSES.map((s) => [s, 0]));
    for (const r of rows) out[r.status] = Number(r.n);
    return out;
  }

  async leasesHeld(): Promise<number> {
    const rows: Array<{ n: string }> = await this.dataSource.query(
      `SELECT count(*) AS n FROM (SELECT 1 FROM runs WHERE status = ANY($1::text[]) AND lease_owner = $2 AND lease_expires_at > now() LIMIT $3) r`,
      [ACTIVE_STATUSES, this.config.nodeId, SCRAPE_ROW_BOUND],
    );
    return Number(rows[0]?.n ?? 0);
  }

  private async guard<T>(what: string, fn: () => Promise<T>): Promise<T | null> {
    try {
      return await withTimeout(fn(), SCRAPE_QUERY_TIMEOUT_MS);
    } catch (err) {
      this.logger.warn(`metrics: ${what} not refreshed: ${(err as Error).message}`);
      return null;
    }
  }
}
