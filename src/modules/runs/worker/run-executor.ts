import { Injectable, Logger } from '@nestjs/common';
import { isDatabaseUnavailable } from '../../../common/errors/error-envelope';
import { ApplyToRun } from '../application/apply-to-run';
import { Run } from '../domain/run.aggregate';
import { Exit, LeaseLost, newExecution } from './execution';
import { LeaseKeeper } from './lease-keeper';
import { RunLoop } from './run-loop';

/**
 * Executes one claimed run on this node: the lease kept (LeaseKeeper: heartbeat, cancel and steer
 * signals) while the loop (RunLoop) asks the decider what is next, performs each effect
 * (ModelTurnEffect, ToolCallEffect) and commits through the writer (RunWriter: ordered,
 * coalesced, guarded writes). Every write is a short commit conditional on the run's version;
 * nothing is held open across a model or tool call. A lost lease stops it without writing, so does
 * an unreachable database (the run resumes after its lease, as after a crash); any other
 * unexpected error fails the run (observation `failed_unexpectedly`).
 */
@Injectable()
export class RunExecutor {
  private readonly logger = new Logger('RunExecutor');

  constructor(
    private readonly loop: RunLoop,
    private readonly lease: LeaseKeeper,
    private readonly path: ApplyToRun,
  ) {}

  /** Executes a run this node has leased until it finishes, waits, or the lease is lost. */
  async execute(initial: Run): Promise<Exit> {
    const ex = newExecution();
    const release = this.lease.hold(initial.id, ex);
    try {
      return await this.loop.run(initial, ex);
    } catch (err) {
      if (err instanceof LeaseLost || ex.leaseLost) return 'lease_lost';
      if (isDatabaseUnavailable(err)) {
        // Nothing more is written here (the database is what failed): the lease runs out and the
        // run is claimed again and resumed from its last commit, as after a crash of this node.
        ex.abort.abort();
        this.logger.warn(`run ${initial.id} interrupted, the database is unavailable (${(err as Error).message}): it resumes when its lease runs out`);
        return 'interrupted';
      }
      this.logger.error(`run ${initial.id} failed unexpectedly: ${(err as Error).stack ?? err}`);
      await this.path.apply(initial.id, { type: 'failed_unexpectedly' }).catch(() => undefined);
      return 'finished';
    } finally {
      release();
    }
  }

  /** Shutdown: stop every executing run here without writing; their leases are released next. */
  stopAll(): number {
    return this.lease.stopAll();
  }
}
