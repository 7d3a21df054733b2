import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { AppConfig } from '../../../common/config/app-config';
import { ExpireRunApprovalCommand } from '../../runs/application/commands/expire-run-approval/expire-run-approval.command';
import { ApprovalRepository } from '../domain/approval.repository';

/** Approvals not decided within APPROVAL_TTL_MS expire, and their waiting run becomes `expired`. */
@Injectable()
export class ApprovalExpirySweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('ApprovalExpiry');
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly config: AppConfig,
    private readonly approvals: ApprovalRepository,
    private readonly commands: CommandBus,
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
        // The run expires if it still waits for this approval, closing it in the same commit.
        if (await this.commands.execute(new ExpireRunApprovalCommand(approval.snapshot().runId, approval.id))) {
          n++;
          continue;
        }
        // Its run no longer waits for it: the row alone closes (unless it changed meanwhile).
        approval.close('expired', new Date());
        await this.approvals.save(approval);
      }
    } catch (err) {
      this.logger.warn(`sweep failed: ${(err as Error).message}`);
    }
    return n;
  }
}
