import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { Clock } from '../../../common/clock/clock';
import { AppConfig } from '../../../common/config/app-config';
import { MessageRepository } from '../../sessions/domain/message.repository';
import { SpendGate } from '../../usage/domain/spend';
import { ApplyToRun } from '../application/apply-to-run';
import { SubagentRelay } from '../application/subagent-relay';
import { appendToolResults } from '../application/tool-result-messages';
import { QuotaStatus } from '../domain/run-decider';
import { RunRepository } from '../domain/run.repository';

/** How often a node looks for due runs. */
const WAKE_POLL_MS = 250;
/** A claimed due run is not claimed again for this long (the claim's lease; a node that died leaves it due then). */
const WAKE_LEASE_MS = 5_000;
/** Most due runs one claim takes. */
const WAKE_BATCH = 100;
/** Due runs decided at once by one node. */
const WAKE_PARALLEL = 8;

/**
 * Wakes waiting runs whose time came (CONTRACT 17), on every node with a worker: a timer rings,
 * an unanswered `ask_user` expires, a callback times out, a quota wait is looked at again. No
 * process sleeps for a pause: the due time is the run's `wake_at` column, claimed with SKIP
 * LOCKED (like the run queue) by whichever node polls first; what the wake does is the decider's
 * `wake` rule, committed through the one write path (the run's version guards it: a wake that
 * comes twice, late, or after an answer or a cancel changes nothing). A resumed run goes back to
 * the queue as `running` without a lease: a worker picks it up.
 */
@Injectable()
export class RunWaker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('RunWaker');
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<number> | null = null;

  constructor(
    private readonly config: AppConfig,
    private readonly runs: RunRepository,
    private readonly path: ApplyToRun,
    private readonly messages: MessageRepository,
    private readonly clock: Clock,
    @Optional() private readonly spend?: SpendGate,
    @Optional() private readonly subagents?: SubagentRelay,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.workerEnabled) return;
    this.timer = setInterval(() => void this.tick(), WAKE_POLL_MS);
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.ticking?.catch(() => undefined);
  }

  /** One pass: claims the due runs and decides each; the number of runs it changed. */
  tick(): Promise<number> {
    if (this.ticking) return this.ticking;
    this.ticking = this.pass().finally(() => (this.ticking = null));
    return this.ticking;
  }

  private async pass(): Promise<number> {
    let changed = 0;
    try {
      for (;;) {
        const due = await this.runs.claimDue(this.clock.date(), WAKE_LEASE_MS, WAKE_BATCH);
        for (let i = 0; i < due.length; i += WAKE_PARALLEL) {
          const results = await Promise.all(due.slice(i, i + WAKE_PARALLEL).map((r) => this.wake(r.id, r.tenantId, r.status)));
          changed += results.filter(Boolean).length;
        }
        if (due.length < WAKE_BATCH) break;
      }
    } catch (err) {
      this.logger.warn(`wake pass failed: ${(err as Error).message}`);
    }
    return changed;
  }

  private async wake(runId: string, tenantId: string, status: string): Promise<boolean> {
    try {
      const quota = status === 'waiting_for_quota' ? await this.quotaOf(tenantId) : undefined;
      // A parent waiting for subagents: the ends it was not told of first (CONTRACT 16).
      if (status === 'waiting_for_subagents') await this.subagents?.recheck(runId);
      const applied = await this.path.apply(
        runId,
        { type: 'wake' },
        { env: { tool: () => null, ...(quota ? { quota } : {}) }, alsoWrite: (run, d) => appendToolResults(this.messages, run, d) },
      );
      return (applied?.decision.events.length ?? 0) > 0;
    } catch (err) {
      this.logger.warn(`wake of ${runId} failed: ${(err as Error).message}`);
      return false;
    }
  }

  private async quotaOf(tenantId: string): Promise<QuotaStatus> {
    if (!this.spend) return { exceeded: false };
    const c = await this.spend.check(tenantId);
    return c.exceeded ? { exceeded: true, resets_at: c.resetsAt.getTime(), details: c.details } : { exceeded: false };
  }
}
