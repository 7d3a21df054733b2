import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { CloseSubagentCommand } from '../../sessions/application/commands/close-subagent/close-subagent.command';
import { MessageRepository } from '../../sessions/domain/message.repository';
import { RunRepository } from '../domain/run.repository';
import { isTerminal } from '../domain/run-status';
import { Run } from '../domain/run.aggregate';
import { Observation } from '../domain/run-decider';
import { ApplyToRun } from './apply-to-run';
import { appendToolResults } from './tool-result-messages';
import { RunSignals } from './run-signals';

/**
 * Subagents (CONTRACT 16) between parent and child runs, through the one write path: a child
 * run's committed end becomes the parent's observation `subagent_ended` (its status, final text
 * and usage), a parent's committed cancel (or `close_subagent`) becomes `cancel_requested` of
 * each child run it named, and a committed `close_subagent` closes the child session. A parent that waits also wakes at its `timeout_ms`, whatever happens here.
 */
@Injectable()
export class SubagentRelay implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Subagents');
  private readonly stops: Array<() => void> = [];

  constructor(
    private readonly signals: RunSignals,
    private readonly runs: RunRepository,
    private readonly messages: MessageRepository,
    private readonly path: ApplyToRun,
    private readonly commands: CommandBus,
  ) {}

  onModuleInit(): void {
    this.stops.push(this.signals.onSubagentRunEnded((r) => void this.reportEnd(r.id, r.parent).catch((err) => this.logger.warn(`subagent run ${r.id}: ${(err as Error).message}`))));
    this.stops.push(this.signals.onSubagentRunsToCancel((ids, by) => void this.cancel(ids, by)));
    this.stops.push(
      this.signals.onSubagentsClosed((tenantId, ids) => {
        for (const id of ids) void this.commands.execute(new CloseSubagentCommand(tenantId, id)).catch((err) => this.logger.warn(`close of subagent ${id}: ${(err as Error).message}`));
      }),
    );
  }

  onModuleDestroy(): void {
    for (const stop of this.stops.splice(0)) stop();
  }

  /** The child run's end, as committed, to its parent. */
  async reportEnd(childRunId: string, parent: { run_id: string; subagent_id: string }): Promise<void> {
    const child = await this.runs.findById(childRunId);
    if (!child || !isTerminal(child.status)) return;
    const p = child.propsForPersistence();
    const final = p.finalMessageId ? await this.messages.findById(p.finalMessageId) : null;
    const text = final ? final.content.flatMap((c) => (c.type === 'text' ? [c.text] : [])).join('') : null;
    // A wait it answers writes its tool result message (what the parent's model reads) in the same commit.
    await this.path.apply(parent.run_id, this.endOf(p, parent, text), { alsoWrite: (run, d) => appendToolResults(this.messages, run, d) });
  }

  /**
   * A waiting parent looked at again (RunWaker): the ends of its subagents' runs that were not
   * reported (the report is an after-commit signal: a crash can lose it) are reported now.
   */
  async recheck(parentRunId: string): Promise<void> {
    const parent = await this.runs.findById(parentRunId);
    if (!parent || parent.status !== 'waiting_for_subagents') return;
    for (const c of parent.state.subagents ?? []) {
      if (isTerminal(c.status)) continue;
      await this.reportEnd(c.run_id, { run_id: parentRunId, subagent_id: c.id });
    }
  }

  private endOf(p: ReturnType<Run['propsForPersistence']>, parent: { run_id: string; subagent_id: string }, text: string | null): Observation {
    const u = p.usage;
    return {
      type: 'subagent_ended',
      outcome: {
        subagent_id: parent.subagent_id,
        run_id: p.id,
        status: p.status,
        text,
        usage: { input_tokens: u.input_tokens, output_tokens: u.output_tokens, cached_input_tokens: u.cached_input_tokens, tool_calls: u.tool_calls, cost: u.estimated_cost.amount },
      },
    };
  }

  private async cancel(ids: readonly string[], by: string): Promise<void> {
    for (const id of ids) {
      try {
        await this.path.apply(id, { type: 'cancel_requested', requested_by: by });
      } catch (err) {
        // Ended meanwhile (run_finished): nothing to cancel.
        this.logger.debug(`cancel of subagent run ${id}: ${(err as Error).message}`);
      }
    }
  }
}
