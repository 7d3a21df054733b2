import { Injectable, Logger, Optional } from '@nestjs/common';
import { SpendGate } from '../../usage/domain/spend';
import { AppConfig } from '../../../common/config/app-config';
import { RunSignals } from '../application/run-signals';
import { RunRepository } from '../domain/run.repository';
import { Execution, LeaseLost } from './execution';

/**
 * Keeps an execution's lease and tells it what happened to its run meanwhile: the heartbeat
 * extends the lease (every RUN_LEASE_MS / 3, 200 ms to 1 s) and a model call's spend reservation, and reports a cancel or steered input
 * of another node; this node's own cancel and steer arrive as in-process signals. A lost lease,
 * or this node shutting down, aborts the execution, which then stops without writing.
 */
@Injectable()
export class LeaseKeeper {
  private readonly logger = new Logger('RunExecutor');
  private readonly live = new Set<Execution>();

  constructor(
    private readonly config: AppConfig,
    private readonly runs: RunRepository,
    private readonly signals: RunSignals,
    @Optional() private readonly spend?: SpendGate,
  ) {}

  /** Keeps `runId`'s lease while `ex` executes it; the returned function lets go. */
  hold(runId: string, ex: Execution): () => void {
    const onCancel = () => {
      ex.cancelled = true;
      ex.abort.abort(new Error('cancelled'));
    };
    const offCancel = this.signals.onCancel(runId, onCancel);
    const offSteer = this.signals.onInputSteered(runId, () => (ex.steered = true));
    this.live.add(ex);
    const heartbeatMs = Math.max(200, Math.min(1000, Math.floor(this.config.runLeaseMs / 3)));
    let beating = false;
    const heartbeat = setInterval(async () => {
      if (beating) return;
      beating = true;
      try {
        const hb = await this.runs.heartbeat(runId, this.config.nodeId, this.config.runLeaseMs);
        if (!hb) {
          ex.leaseLost = true;
          ex.abort.abort(new LeaseLost('lease lost'));
        } else if (hb.cancelRequested && !ex.cancelled) {
          onCancel();
        }
        // Steered on another node: the run's inbox holds input the run has not seen.
        if (hb && hb.inboxSize > ex.inboxKnown) ex.steered = true;
        // A model call's spend reservation lives as long as the lease (a dead node's stops counting with it).
        if (hb && ex.spendHeld) await this.spend?.extend(runId, this.config.runLeaseMs);
      } catch (err) {
        this.logger.warn(`heartbeat of ${runId} failed: ${(err as Error).message}`);
      } finally {
        beating = false;
      }
    }, heartbeatMs);
    return () => {
      clearInterval(heartbeat);
      offCancel();
      offSteer();
      this.live.delete(ex);
    };
  }

  /** Shutdown: stops every execution here without writing; their leases are released next. */
  stopAll(): number {
    for (const ex of this.live) {
      ex.leaseLost = true;
      ex.abort.abort(new LeaseLost('node shutting down'));
    }
    return this.live.size;
  }
}
