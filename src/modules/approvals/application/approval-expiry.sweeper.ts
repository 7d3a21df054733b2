import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../../../common/config/app-config';
import { ConcurrencyConflict } from '../../../common/errors/domain-error';
import { RunPersistence } from '../../runs/application/run-persistence';
import { RunRepository } from '../../runs/domain/run.repository';
import { ApprovalRepository } from '../domain/approval.repository';

/** Approvals not decided within APPROVAL_TTL_MS expire, and their waiting run becomes `expired`. */
@Injectable()
export class ApprovalExpirySweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('ApprovalExpiry');
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly config: AppConfig,
    private readonly approvals: ApprovalRepository,
    private readonly runs: RunRepository,
    private readonly persistence: RunPersistence,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.workerEnabled) return;
    const every = Math.max(200, Math.min(5000, Math.floor(this.config.approvalTtlMs / 4)));
    this.timer = setInterval(() => void this.sweep(), every);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }

  async sweep(): Promise<number> {
    let n = 0;
    try {
      for (const approval of await this.approvals.expiredPending(100)) {
        const run = await this.runs.findById(approval.snapshot().runId);
        const now = new Date();
        approval.close('expired', now);
        if (!run || run.status !== 'waiting_for_approval') {
          await this.approvals.save(approval);
          continue;
        }
        run.expire(now, { code: 'approval_expired', message: `approval ${approval.id} was not decided in time` });
        try {
          await this.persistence.save(run, async () => {
            if (!(await this.approvals.save(approval))) throw new ConcurrencyConflict('approval', approval.id, approval.expectedVersion);
          });
          n++;
        } catch (err) {
          if (!(err instanceof ConcurrencyConflict)) throw err;
        }
      }
    } catch (err) {
      this.logger.warn(`sweep failed: ${(err as Error).message}`);
    }
    return n;
  }
}
