import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { ConcurrencyConflict, DomainError } from '../../../../../common/errors/domain-error';
import { newId } from '../../../../../common/ids/ids';
import { ContentPart } from '../../../../agents/domain/model-provider';
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
      if (run.isTerminal) throw new DomainError('run_finished', `the run is already ${run.status}`, { run_id: runId, status: run.status }, runId);
      const ids = outputs.map((o) => o.tool_call_id);
      const pending = new Map(run.state.pending.filter((p) => p.status === 'awaiting_client').map((p) => [p.tool_call_id, p]));
      const unexpected = ids.filter((id, i) => !pending.has(id) || ids.indexOf(id) !== i);
      if (run.status !== 'waiting_for_tool' || unexpected.length > 0) {
        throw new DomainError('tool_output_not_expected', 'these tool calls are not waiting for a client output', {
          run_id: runId,
          run_status: run.status,
          tool_call_ids: run.status !== 'waiting_for_tool' ? ids : unexpected,
          pending_tool_call_ids: [...pending.keys()],
        });
      }
      const snap = run.snapshot();
      const now = Date.now();
      const parts: ContentPart[] = [];
      for (const o of outputs) {
        const p = pending.get(o.tool_call_id)!;
        if (o.error) {
          const error = { code: o.error.code ?? 'tool_failed', message: o.error.message, retryable: false };
          run.updatePending(p.tool_call_id, { status: 'failed', ok: false, error });
          run.record('tool.failed', { tool_call_id: p.tool_call_id, tool_name: p.tool_name, error, duration_ms: now - snap.updatedAt.getTime() });
          parts.push({ type: 'tool_result', tool_call_id: p.tool_call_id, tool_name: p.tool_name, ok: false, error: { code: error.code, message: error.message } });
        } else {
          run.updatePending(p.tool_call_id, { status: 'completed', ok: true, result: o.output ?? null });
          run.record('tool.completed', { tool_call_id: p.tool_call_id, tool_name: p.tool_name, result: o.output ?? null, duration_ms: now - snap.updatedAt.getTime() });
          parts.push({ type: 'tool_result', tool_call_id: p.tool_call_id, tool_name: p.tool_name, ok: true, result: o.output ?? null });
        }
      }
      if (!run.state.pending.some((p) => p.status === 'awaiting_client')) run.resume();
      try {
        await this.persistence.save(run, async () => {
          for (const part of parts) {
            await this.messages.append({
              id: newId('msg'),
              tenantId: snap.tenantId,
              subjectId: snap.subjectId,
              sessionId: snap.sessionId,
              runId,
              role: 'tool',
              status: 'completed',
              content: [part],
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
