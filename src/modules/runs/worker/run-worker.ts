import { Injectable, Logger, OnApplicationBootstrap, BeforeApplicationShutdown } from '@nestjs/common';
import { Clock } from '../../../common/clock/clock';
import { AppConfig } from '../../../common/config/app-config';
import { DbPriority } from '../../../common/database/db-priority';
import { withLogContext } from '../../../common/logging/log-context';
import { ApplyToRun } from '../application/apply-to-run';
import { RunSignals } from '../application/run-signals';
import { Run } from '../domain/run.aggregate';
import { RunRepository } from '../domain/run.repository';
import { RunExecutor } from './run-executor';

const IDLE_POLL_MS = 500;
const SWEEP_EVERY_MS = 5_000;
/** Most runs leased by one claim statement. */
const CLAIM_BATCH = 32;

/**
 * One per node. Claims runs with a lease (FOR NO KEY UPDATE SKIP LOCKED): queued runs in FIFO order per
 * session, and running runs whose lease expired (another node died: crash take-over). Executes
 * up to WORKER_CONCURRENCY runs at once. A sweeper expires queued runs past RUN_QUEUE_TTL_MS.
 * On shutdown it stops executing and releases its leases, so another node resumes the runs.
 */
@Injectable()
export class RunWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('RunWorker');
  private running = false;
  private active = 0;
  private wake: (() => void) | null = null;
  private nudged = false;
  private loopDone: Promise<void> = Promise.resolve();
  private sweepTimer: NodeJS.Timeout | null = null;
  private offWork: (() => void) | null = null;
  private readonly executing = new Set<Promise<unknown>>();

  constructor(
    private readonly config: AppConfig,
    private readonly runs: RunRepository,
    private readonly executor: RunExecutor,
    private readonly path: ApplyToRun,
    private readonly signals: RunSignals,
    private readonly clock: Clock,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.workerEnabled) return;
    this.start();
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.offWork = this.signals.onWorkAvailable(() => this.nudge());
    this.loopDone = this.claimLoop();
    this.sweepTimer = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
    this.sweepTimer.unref();
  }

  /** Stops claiming; running executions stop without writing and their leases are released. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.offWork?.();
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.nudge();
    await this.loopDone;
    this.executor.stopAll();
    // At most 5 s for the executions to stop; the timer is cleared after (a pending one kept a
    // process that had closed everything alive for those 5 s: Jest's "did not exit" warning).
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.executing]), new Promise((r) => (bound = setTimeout(r, 5000)))]);
    clearTimeout(bound);
    const released = await this.runs.releaseLeases(this.config.nodeId).catch(() => 0);
    if (released > 0) this.logger.log(`released ${released} run lease(s)`);
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.stop();
  }

  private nudge(): void {
    const w = this.wake;
    this.wake = null;
    // Not sleeping (a claim is in flight, whose snapshot may predate the new work): remembered,
    // so the next sleep returns at once instead of waiting a whole poll interval.
    if (w) w();
    else this.nudged = true;
  }

  private sleep(ms: number): Promise<void> {
    if (this.nudged) {
      this.nudged = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.wake = null;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  private async claimLoop(): Promise<void> {
    while (this.running) {
      if (this.active >= this.config.workerConcurrency) {
        await this.sleep(IDLE_POLL_MS);
        continue;
      }
      let claimed: Run[] = [];
      // As many as there are free slots (bounded): one statement leases a whole burst of runs.
      const free = Math.min(this.config.workerConcurrency - this.active, CLAIM_BATCH);
      try {
        claimed = await this.runs.claimBatch(this.config.nodeId, this.config.runLeaseMs, free);
      } catch (err) {
        this.logger.warn(`claim failed: ${(err as Error).message}`);
        await this.sleep(IDLE_POLL_MS * 2);
        continue;
      }
      if (claimed.length === 0) {
        await this.sleep(IDLE_POLL_MS);
        continue;
      }
      if (!this.running) {
        await this.runs.releaseLeases(this.config.nodeId).catch(() => undefined);
        break;
      }
      for (const run of claimed) this.launch(run);
      // Fewer than asked for: nothing else was claimable at that snapshot. Claim again when told
      // of new work (or at the next poll), not at once for nothing.
      if (claimed.length < free) await this.sleep(IDLE_POLL_MS);
    }
  }

  private launch(claimed: Run): void {
    this.active++;
    // Every log line of this execution carries its run id. Its database work waits behind requests
    // but, until run.started is committed, ahead of other runs' (DbPriority; the executor lowers it).
    const p = withLogContext({ runId: claimed.id }, () => DbPriority.run('run-start', () => this.executor.execute(claimed)))
      .catch((err) => this.logger.error(`executor crashed on ${claimed.id}: ${(err as Error).message}`))
      .finally(() => {
        // Every slot was taken: the claim loop sleeps until one frees. (A run that ends wakes it
        // itself when its session has another run waiting: RunPersistence.)
        if (this.active-- >= this.config.workerConcurrency) this.nudge();
        this.executing.delete(p);
      });
    this.executing.add(p);
  }

  /** Expires queued runs that were not started within RUN_QUEUE_TTL_MS. */
  async sweep(): Promise<number> {
    let n = 0;
    try {
      for (const id of await this.runs.findExpiredQueued(100, this.clock.date())) {
        // Only a run still queued expires (the decider's rule): one started meanwhile goes on.
        const applied = await this.path.apply(id, { type: 'queue_expired' });
        if (applied?.run.status === 'expired' && applied.decision.events.length > 0) n++;
      }
    } catch (err) {
      this.logger.warn(`sweep failed: ${(err as Error).message}`);
    }
    return n;
  }
}
