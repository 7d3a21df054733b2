import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { UnitOfWork } from '../../../../../common/database/unit-of-work';
import { ConcurrencyConflict } from '../../../../../common/errors/domain-error';
import { RunRepository } from '../../../domain/run.repository';
import { loadOwnedRun } from '../../load-owned-run';
import { RunPersistence } from '../../run-persistence';
import { RunSignals } from '../../run-signals';
import { CancelRunCommand } from './cancel-run.command';

/**
 * Queued and waiting runs are cancelled at once. A run the worker is executing becomes
 * `cancelling`; its executor is signalled, stops the current model call or tool, records that
 * step's real outcome and then finishes the run as `cancelled`.
 */
@CommandHandler(CancelRunCommand)
export class CancelRunHandler implements ICommandHandler<CancelRunCommand> {
  constructor(
    private readonly runs: RunRepository,
    private readonly persistence: RunPersistence,
    private readonly signals: RunSignals,
    private readonly uow: UnitOfWork,
  ) {}

  async execute({ principal, runId }: CancelRunCommand) {
    for (let attempt = 1; ; attempt++) {
      const run = await loadOwnedRun(this.runs, principal, runId);
      if (run.status === 'cancelled') return { run: run.snapshot(), alreadyCancelled: true };
      const changed = run.requestCancel(principal.subjectId, new Date());
      if (!changed) return { run: run.snapshot(), alreadyCancelled: false };
      try {
        await this.persistence.save(run);
      } catch (err) {
        // The executor saved in between: re-read and decide again.
        if (err instanceof ConcurrencyConflict && attempt < 10) continue;
        throw err;
      }
      this.uow.afterCommit(() => this.signals.cancelRequested(runId));
      return { run: run.snapshot(), alreadyCancelled: false };
    }
  }
}
