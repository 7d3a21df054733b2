import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { ApplyToRun } from '../../apply-to-run';
import { CancelRunCommand } from './cancel-run.command';

/**
 * Queued and waiting runs are cancelled at once. A run the worker is executing becomes
 * `cancelling`; its executor is signalled, stops the current model call or tool, records that
 * step's real outcome and then finishes the run as `cancelled` (the decider's cancel rule).
 */
@CommandHandler(CancelRunCommand)
export class CancelRunHandler implements ICommandHandler<CancelRunCommand> {
  constructor(private readonly path: ApplyToRun) {}

  async execute({ principal, runId }: CancelRunCommand) {
    const { run, decision } = (await this.path.apply(runId, { type: 'cancel_requested', requested_by: principal.subjectId }, { principal }))!;
    return { run: run.snapshot(), alreadyCancelled: decision.events.length === 0 && run.status === 'cancelled' };
  }
}
