import { Injectable } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { Principal } from '../../../common/auth/principal';
import { DomainError } from '../../../common/errors/domain-error';
import { CreateSessionCommand } from '../../sessions/application/commands/create-session/create-session.command';
import { CreateRunCommand } from '../application/commands/create-run/create-run.command';
import { Run } from '../domain/run.aggregate';
import { Effect, Observation } from '../domain/run-decider';
import { Execution } from './execution';
import { RunWriter } from './run-writer';

/**
 * The effect `start_subagent_run` (CONTRACT 16): a run of a subagent, started through the
 * sessions and runs modules' commands as the parent run's owner - a new child session
 * (`create_subagent`) or the subagent's existing one (`send_subagent_input`) - with the input as
 * its user message and its share of the parent's budgets as its limits. The call's start is committed first (a crash after it is `outcome_unknown`,
 * never a second subagent). Null: that commit met a version conflict (the caller reloads).
 */
@Injectable()
export class SubagentEffect {
  constructor(
    private readonly commands: CommandBus,
    private readonly writer: RunWriter,
  ) {}

  async perform(run: Run, ex: Execution, effect: Extract<Effect, { type: 'start_subagent_run' }>): Promise<Observation | null> {
    if (!(await this.writer.save(run, ex))) return null;
    const o = run.owner;
    const call = effect.call;
    // The parent run's owner: the child is theirs (members see their own children).
    const owner: Principal = { tenantId: o.tenantId, subjectId: o.subjectId, role: 'member', keyId: `run:${o.runId}` };
    try {
      let subagentId = effect.subagent.id;
      if (subagentId === null) {
        const child = await this.commands.execute(
          new CreateSessionCommand(owner, {
            agentId: effect.subagent.agent.id,
            agentVersion: effect.subagent.agent.version,
            title: effect.subagent.name,
            parent: { sessionId: o.sessionId, runId: o.runId, name: effect.subagent.name, status: 'active' },
          }),
        );
        subagentId = child.id;
      }
      const started = await this.commands.execute(
        new CreateRunCommand(owner, subagentId, {
          content: [{ type: 'text', text: effect.input }],
          concurrency: 'enqueue',
          parent: { run_id: o.runId, subagent_id: subagentId },
          // Its share of the parent's budgets (the decider's): the tree stays inside the parent's limits.
          limits: { ...effect.limits },
        }),
      );
      return {
        type: 'subagent_run_started',
        tool_call_id: call.tool_call_id,
        subagent: { id: subagentId, name: effect.subagent.name, agent: { ...effect.subagent.agent } },
        run_id: started.run.id,
        created: effect.subagent.id === null,
        allowance: { ...effect.allowance },
      };
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      return { type: 'tool_finished', tool_call_id: call.tool_call_id, result: { ok: false, error: { code: 'tool_failed', message: `the subagent could not be started: ${err.code}: ${err.message}`, retryable: false } }, duration_ms: 0 };
    }
  }
}
