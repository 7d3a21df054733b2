import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../../../common/config/app-config';
import { EventStreams } from '../domain/event-streams';

const SWEEP_EVERY_MS = 10 * 60_000;
const RUNS_PER_BATCH = 100;
const MAX_BATCHES = 20;

/**
 * Retention: deletes the events of runs that finished more than EVENT_RETENTION_DAYS ago (never of
 * active runs) and records `purged_through`, so an older cursor answers 410 `cursor_expired`.
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
    this.timer = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** One sweep; returns the number of deleted events. */
  async sweep(now: Date = new Date()): Promise<number> {
    const cutoff = new Date(now.getTime() - this.config.eventRetentionDays * 24 * 3_600_000);
    let total = 0;
    try {
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
