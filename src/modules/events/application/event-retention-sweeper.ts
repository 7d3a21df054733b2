import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../../../common/config/app-config';
import { EventStreams } from '../domain/event-streams';

const SWEEP_EVERY_MS = 10 * 60_000;
const RUNS_PER_BATCH = 100;
const MAX_BATCHES = 20;
const DAY_MS = 24 * 3_600_000;

/**
 * Time partitions and retention of run events. Every sweep creates the partitions of the next
 * two EVENT_PARTITION_DAYS periods (ahead of the writes, so appends never wait on DDL), drops
 * whole partitions older than EVENT_RETENTION_DAYS once all their runs finished before that
 * (never an active run's events; the partition that holds the table from before partitioning,
 * `run_events_legacy`, goes the same way), and deletes finished runs row by row only in the
 * default partition (rows written while no partition covered their time). `purged_through` is recorded
 * either way, so an older cursor answers 410 `cursor_expired`.
 */
@Injectable()
export class EventRetentionSweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('EventRetention');
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly streams: EventStreams,
    private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    void this.ensurePartitions();
    this.timer = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Creates the partitions up to two periods ahead of `now`; returns how many were created. */
  async ensurePartitions(now: Date = new Date()): Promise<number> {
    const width = this.config.eventPartitionDays;
    try {
      return await this.streams.ensurePartitions(width, new Date(now.getTime() + 2 * width * DAY_MS));
    } catch (err) {
      // Writes still land (in the default partition) and the next sweep tries again.
      this.logger.warn(`creating event partitions failed: ${(err as Error).message}`);
      return 0;
    }
  }

  /** One sweep; returns the number of events dropped or deleted. */
  async sweep(now: Date = new Date()): Promise<number> {
    await this.ensurePartitions(now);
    const cutoff = new Date(now.getTime() - this.config.eventRetentionDays * DAY_MS);
    let total = 0;
    try {
      const dropped = await this.streams.dropExpiredPartitions(cutoff);
      total += dropped.events;
      if (dropped.partitions > 0) this.logger.log(`dropped ${dropped.partitions} event partition(s) (${dropped.events} events)`);
      if (dropped.postponed > 0) this.logger.log(`kept ${dropped.postponed} expired event partition(s): runs in them had not finished before the cutoff`);
      for (let i = 0; i < MAX_BATCHES; i++) {
        const { runs, events } = await this.streams.purgeFinishedRuns(cutoff, RUNS_PER_BATCH);
        total += events;
        if (runs < RUNS_PER_BATCH) break;
      }
    } catch (err) {
      this.logger.warn(`sweep failed: ${(err as Error).message}`);
    }
    return total;
  }
}
