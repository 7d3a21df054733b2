import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../../../common/config/app-config';
import { CommandBus } from '@nestjs/cqrs';
import { CloseSubagentCommand } from '../../sessions/application/commands/close-subagent/close-subagent.command';
import { MessageRepository } from '../../sessions/domain/message.repository';
import { RunRepository } from '../domain/run.repository';
import { isTerminal } from '../domain/run-status';
import { Run, SubagentCancel } from '../domain/run.aggregate';
import { Observation } from '../domain/run-decider';
import { ApplyToRun } from './apply-to-run';
import { appendToolResults } from './tool-result-messages';
import { RunSignals } from './run-signals';

/** How often a node looks for subagent runs under a cancelled parent (the cascade's recovery). */
const ORPHAN_SWEEP_MS = 2_000;
/** Most of them one sweep cancels. */
const ORPHAN_BATCH = 100;

/**
 * Subagents (CONTRACT 16) between parent and child runs, through the one write path: a child
 * run's committed end becomes the parent's observation `subagent_ended` (its status, final text
 * and usage), a parent's committed cancel (or `close_subagent`) becomes `cancel_requested` of
 * each child run it named, a committed `close_subagent` closes the child session, and an approval requested inside a child
 * (committed) is shown on its parent's stream (observation `subagent_approval_requested`). A parent that waits also wakes at its `timeout_ms`, whatever happens here.
 */
@Injectable()
export class SubagentRelay implements OnModuleInit, OnModuleDestroy, OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Subagents');
  private readonly stops: Array<() => void> = [];
  private timer: NodeJS.Timeout | null = null;
  private sweeping: Promise<number> | null = null;

  constructor(
    private readonly signals: RunSignals,
    private readonly runs: RunRepository,
    private readonly messages: MessageRepository,
    private readonly path: ApplyToRun,
    private readonly commands: CommandBus,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.stops.push(this.signals.onSubagentRunEnded((r) => void this.reportEnd(r.id, r.parent).catch((err) => this.logger.warn(`subagent run ${r.id}: ${(err as Error).message}`))));
    this.stops.push(
      this.signals.onSubagentApprovalRequested((parent, approval) =>
        void this.path
          .apply(parent.run_id, { type: 'subagent_approval_requested', subagent_id: parent.subagent_id, approval })
          .catch((err) => this.logger.warn(`approval ${approval.approval_id} of subagent ${parent.subagent_id}: ${(err as Error).message}`)),
      ),
    );
    this.stops.push(
      this.signals.onSubagentRunsStarted((parentRunId, started) => {
        for (const c of started) void this.catchUp(parentRunId, c).catch((err) => this.logger.warn(`subagent run ${c.run_id}: ${(err as Error).message}`));
      }),
    );
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

  onApplicationBootstrap(): void {
    if (!this.config.workerEnabled) return;
    this.timer = setInterval(() => void this.sweep(), ORPHAN_SWEEP_MS);
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sweeping?.catch(() => undefined);
  }

  /**
   * The cascade's recovery (CONTRACT 16): a parent's cancel or end is committed, its children's
   * cancels follow after the commit, in memory - a node that dies in between leaves children
   * running under an ended parent. Every node looks for them every ORPHAN_SWEEP_MS and cancels them
   * through the one write path (a cancel that came twice changes nothing). The number cancelled.
   */
  sweep(): Promise<number> {
    if (this.sweeping) return this.sweeping;
    this.sweeping = (async () => {
      try {
        const orphans = await this.runs.orphanedSubagentRuns(ORPHAN_BATCH);
        for (const o of orphans) await this.cancel([{ run_id: o.id, reason: o.parentCancelled ? 'parent_cancelled' : 'parent_ended' }], `run:${o.parentRunId}`);
        if (orphans.length > 0) this.logger.log({ msg: 'cancel cascade recovered', runs: orphans.map((o) => o.id) });
        return orphans.length;
      } catch (err) {
        this.logger.warn(`orphan sweep failed: ${(err as Error).message}`);
        return 0;
      }
    })().finally(() => (this.sweeping = null));
    return this.sweeping;
  }

  /** The child run's end, as committed, to its parent. */
  async reportEnd(childRunId: string, parent: { run_id: string; subagent_id: string }): Promise<void> {
    const child = await this.runs.findById(childRunId);
    if (child && isTerminal(child.status)) await this.reportEndOf(child, parent);
  }

  private async reportEndOf(child: Run, parent: { run_id: string; subagent_id: string }): Promise<void> {
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
      await this.reportState(c.run_id, { run_id: parentRunId, subagent_id: c.id }, c.approvals ?? []);
    }
  }

  /**
   * The parent committed that it started this subagent run: a child that ended or asked for an
   * approval before that commit found a parent that did not know it (its report decided nothing),
   * so what it did is reported now. Whichever commit comes second sees the other.
   */
  private async catchUp(parentRunId: string, c: { subagent_id: string; run_id: string }): Promise<void> {
    await this.reportState(c.run_id, { run_id: parentRunId, subagent_id: c.subagent_id }, []);
  }

  /**
   * What a subagent's run is at, read once, to its parent: its end when it has ended, else the
   * approvals it waits for that the parent was not shown (`shown`); both reports are after-commit
   * signals, which a crash can lose.
   */
  private async reportState(childRunId: string, parent: { run_id: string; subagent_id: string }, shown: readonly string[]): Promise<void> {
    const child = await this.runs.findById(childRunId);
    if (!child) return;
    if (isTerminal(child.status)) return this.reportEndOf(child, parent);
    if (child.status !== 'waiting_for_approval') return;
    for (const p of child.state.pending) {
      if (p.status !== 'awaiting_approval' || !p.approval_id || shown.includes(p.approval_id)) continue;
      const approval = { approval_id: p.approval_id, run_id: childRunId, tool_call_id: p.tool_call_id, tool_name: p.tool_name, arguments: p.arguments, risk: p.risk ?? 'approve', expires_at: p.approval_expires_at ?? Date.now() };
      await this.path.apply(parent.run_id, { type: 'subagent_approval_requested', subagent_id: parent.subagent_id, approval });
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
        usage: {
          input_tokens: u.input_tokens,
          output_tokens: u.output_tokens,
          cached_input_tokens: u.cached_input_tokens,
          tool_calls: u.tool_calls,
          cost: u.estimated_cost.amount,
          subagent_runs: p.state.subagent_runs ?? 0,
        },
      },
    };
  }

  private async cancel(cancels: ReadonlyArray<SubagentCancel>, by: string): Promise<void> {
    for (const c of cancels) {
      try {
        await this.path.apply(c.run_id, { type: 'cancel_requested', requested_by: by, reason: c.reason });
      } catch (err) {
        // Ended meanwhile (run_finished): nothing to cancel.
        this.logger.debug(`cancel of subagent run ${c.run_id}: ${(err as Error).message}`);
      }
    }
  }
}
