import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { ConcurrencyConflict } from '../../../../../common/errors/domain-error';
import { newId } from '../../../../../common/ids/ids';
import { MessageRepository } from '../../../../sessions/domain/message.repository';
import { RunRepository } from '../../../domain/run.repository';
import { loadOwnedRun } from '../../load-owned-run';
import { RunPersistence } from '../../run-persistence';
import { RunSignals } from '../../run-signals';
import { SubmitToolOutputsCommand } from './submit-tool-outputs.command';

/**
 * Results of client-side tools: each becomes `tool.completed` / `tool.failed` and a `tool`
 * message; when none is left pending the run resumes and a worker continues the loop.
 */
@CommandHandler(SubmitToolOutputsCommand)
export class SubmitToolOutputsHandler implements ICommandHandler<SubmitToolOutputsCommand> {
  constructor(
    private readonly runs: RunRepository,
    private readonly persistence: RunPersistence,
    private readonly messages: MessageRepository,
    private readonly signals: RunSignals,
  ) {}

  async execute({ principal, runId, outputs }: SubmitToolOutputsCommand) {
    for (let attempt = 1; ; attempt++) {
      const run = await loadOwnedRun(this.runs, principal, runId);
      // The run checks the outputs (each must answer a pending client call) and records them.
      const { messages } = run.submitClientOutputs(outputs, { now: Date.now(), newId });
      const snap = run.snapshot();
      try {
        await this.persistence.save(run, async () => {
          for (const m of messages) {
            await this.messages.append({
              id: m.id,
              tenantId: snap.tenantId,
              subjectId: snap.subjectId,
              sessionId: snap.sessionId,
              runId,
              role: 'tool',
              status: 'completed',
              content: m.content,
              metadata: {},
            });
          }
        });
      } catch (err) {
        if (err instanceof ConcurrencyConflict && attempt < 10) continue;
        throw err;
      }
      this.signals.workAvailable();
      return run.snapshot();
    }
  }
}
