import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../../../../common/config/app-config';
import { SessionRepository } from '../../domain/session.repository';
import { KnownSessions } from '../known-sessions';

/** Sessions archived or deleted per statement (a sweep repeats while a batch was full). */
const SWEEP_BATCH = 200;

/**
 * The session TTL sweeper (CONTRACT section 17), on every node that runs workers: every
 * SESSION_TTL_SWEEP_MS it archives or deletes the sessions past `expires_at` (`last_active_at` +
 * `ttl.seconds`) that have no active run. The statements lock what they change (SKIP LOCKED), so
 * nodes sweeping at once never touch the same session twice.
 */
@Injectable()
export class SessionTtlSweeper implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('SessionTtlSweeper');
  private timer: NodeJS.Timeout | null = null;
  private sweeping: Promise<void> | null = null;
  /** The time that decides expiry; tests set their own. */
  now: () => Date = () => new Date();

  constructor(
    private readonly repo: SessionRepository,
    private readonly known: KnownSessions,
    private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.workerEnabled) return;
    this.timer = setInterval(() => void this.tick(), this.config.sessionTtlSweepMs);
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sweeping;
  }

  /** One sweep (no overlap with a sweep in progress). Returns how many sessions it archived and deleted. */
  async tick(): Promise<{ archived: number; deleted: number }> {
    if (this.sweeping) {
      await this.sweeping;
      return { archived: 0, deleted: 0 };
    }
    let archived = 0;
    let deleted = 0;
    const run = (async () => {
      try {
        for (;;) {
          const out = await this.repo.sweepExpired(this.now(), SWEEP_BATCH);
          for (const id of out.deleted) this.known.forget(id);
          for (const id of out.archived) this.known.forget(id);
          archived += out.archived.length;
          deleted += out.deleted.length;
          if (out.archived.length < SWEEP_BATCH && out.deleted.length < SWEEP_BATCH) break;
        }
        if (archived + deleted > 0) this.logger.log(`session TTL: ${archived} archived, ${deleted} deleted`);
      } catch (err) {
        this.logger.warn(`session TTL sweep failed (next sweep retries): ${(err as Error).message}`);
      }
    })();
    this.sweeping = run;
    try {
      await run;
    } finally {
      this.sweeping = null;
    }
    return { archived, deleted };
  }
}
