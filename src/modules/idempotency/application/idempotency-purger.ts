import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { IdempotencyStore } from '../domain/idempotency.store';

const PURGE_EVERY_MS = 5 * 60_000;

/** Deletes records older than IDEMPOTENCY_TTL_HOURS in small batches; a purged key is new. */
@Injectable()
export class IdempotencyPurger implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('IdempotencyPurger');
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly store: IdempotencyStore) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.purge(), PURGE_EVERY_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }

  async purge(): Promise<number> {
    let total = 0;
    try {
      for (let i = 0; i < 20; i++) {
        const n = await this.store.purgeExpired(1000);
        total += n;
        if (n < 1000) break;
      }
    } catch (err) {
      this.logger.warn(`purge failed: ${(err as Error).message}`);
    }
    return total;
  }
}
