import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { MessageRepository } from '../../../../sessions/domain/message.repository';
import { toolResultContent } from '../../../domain/run-decider';
import { ApplyToRun } from '../../apply-to-run';
import { SubmitToolOutputsCommand } from './submit-tool-outputs.command';

/**
 * Results of client-side tools: each becomes `tool.completed` / `tool.failed` and a `tool`
 * message (in the same commit); when none is left pending the run resumes and a worker
 * continues the loop. The decider checks that each output answers a pending client call.
 */
@CommandHandler(SubmitToolOutputsCommand)
export class SubmitToolOutputsHandler implements ICommandHandler<SubmitToolOutputsCommand> {
  constructor(
    private readonly path: ApplyToRun,
    private readonly messages: MessageRepository,
  ) {}

  async execute({ principal, runId, outputs }: SubmitToolOutputsCommand) {
    const { run } = (await this.path.apply(
      runId,
      { type: 'client_tool_outputs', outputs },
      {
        principal,
        alsoWrite: async (run, d) => {
          const o = run.owner;
          for (const e of d.events) {
            if (e.type !== 'tool_finished') continue;
            const call = run.state.pending.find((p) => p.tool_call_id === e.tool_call_id)!;
            const content = toolResultContent(call, e.result);
            await this.messages.append({ id: e.result_message_id, tenantId: o.tenantId, subjectId: o.subjectId, sessionId: o.sessionId, runId, role: 'tool', status: 'completed', content, metadata: {} });
          }
        },
      },
    ))!;
    return run.snapshot();
  }
}
