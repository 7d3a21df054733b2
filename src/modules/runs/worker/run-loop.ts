import { Injectable, Optional } from '@nestjs/common';
import { SpendGate } from '../../usage/domain/spend';
import { AgentDirectory, canHandOff } from '../../agents/domain/agent-definition';
import { ApprovalsPort } from '../application/approvals-port';
import { LeftoversArrived } from '../application/run-persistence';
import { Run } from '../domain/run.aggregate';
import { Decision, HandoffTarget, NextCallEstimate, Observation, QuotaStatus } from '../domain/run-decider';
import { callCost } from '../../usage/domain/money';
import { currentAgentOf } from '../domain/run-state';
import { RunRepository } from '../domain/run.repository';
import { Execution, Exit, LeaseLost } from './execution';
import { ModelTurnEffect } from './model-turn.effect';
import { RunEnv } from './run-env';
import { RunWriter } from './run-writer';
import { SubagentEffect } from './subagent.effect';
import { ToolCallEffect } from './tool-call.effect';
import { TurnContext } from './turn-context';
import { RunSecrets, scrubObservation } from '../application/run-secrets';
import { SecretScrubber } from '../../../common/secrets/secret-scrubber';

/**
 * The interpreter of one execution: asks the decider what is next, has the effect performed (a
 * file per effect, each returning an observation), feeds the observation back and commits what
 * was decided through the writer. Write policy lives in the writer, rules in the decider: here
 * only the order. A conflict (someone else changed the run) reloads it and decides again.
 */
@Injectable()
export class RunLoop {
  constructor(
    private readonly runs: RunRepository,
    private readonly agents: AgentDirectory,
    private readonly approvals: ApprovalsPort,
    private readonly env: RunEnv,
    private readonly context: TurnContext,
    private readonly writer: RunWriter,
    private readonly modelTurn: ModelTurnEffect,
    private readonly toolCall: ToolCallEffect,
    private readonly secrets: RunSecrets,
    @Optional() private readonly subagents?: SubagentEffect,
    @Optional() private readonly spend?: SpendGate,
  ) {}

  /** An observation to decide again after a conflict's reload (see `start_subagent_run`). */
  private readonly redo = new WeakMap<Execution, Observation>();

  /** Holds the call's estimate (its input at the input price + the model's output cap at the output price) against the tenant's limit. */
  private async reserveFor(run: Run, ex: Execution, messageId: string, next: NextCallEstimate | undefined): Promise<QuotaStatus> {
    const amount = next ? callCost(next.price, { input_tokens: next.input_tokens, output_tokens: next.max_output_tokens }) : '0';
    const c = await this.spend!.reserve(run.owner.tenantId, { runId: run.id, messageId, amount, ttlMs: this.env.leaseMs });
    if (c.reserved) ex.spendHeld = messageId;
    return c.exceeded ? { exceeded: true, resets_at: c.resetsAt.getTime(), details: c.details } : { exceeded: false };
  }

  /** The turn's real cost committed with its end (or it made none): its reservation goes. Not after a lost lease (the run's next owner may hold one). */
  private async releaseSpend(run: Run, ex: Execution): Promise<void> {
    const held = ex.spendHeld;
    ex.spendHeld = undefined;
    if (!held || ex.leaseLost || !this.spend) return;
    // Failing here leaves it to expire with the lease it was tied to.
    await this.spend.release(run.id, held).catch(() => undefined);
  }

  async run(initial: Run, ex: Execution): Promise<Exit> {
    let run = initial;
    if (ex.agent === undefined) {
      const agent = currentAgentOf(run.propsForPersistence());
      ex.agent = await this.agents.findPinned(run.owner.tenantId, agent.id, agent.version);
    }
    // A run that never called a tool resolved no secret: nothing to read (a fresh run's first execution).
    if (ex.secrets === undefined) ex.secrets = run.propsForPersistence().usage.tool_calls > 0 ? await this.secrets.scrubberOf(run.owner.tenantId, [run.id]) : SecretScrubber.none;
    // Only a run whose agent can hand off reads which agent its session ended with (CONTRACT 16).
    const lastAgent = run.status === 'queued' && canHandOff(ex.agent) ? await this.lastAgentOf(run) : undefined;
    let observation: Observation = { type: 'lease_resumed' };
    let redone: Observation | undefined;
    for (let guard = 0; guard < 10_000; guard++) {
      if (ex.leaseLost) return 'lease_lost';
      if (ex.steered) run = await this.takeSteered(run, ex);
      ex.inboxKnown = run.propsForPersistence().inbox.length;
      const env = this.env.of(run, ex);
      // The tenant's spend limit (cached: no statement without one) is held against before a model call.
      // (A queued run's first decision is its start, never a model call.)
      const limited = this.spend !== undefined && run.status === 'running' && nextIsModelTurn(run) && (await this.spend.hasLimit(run.owner.tenantId));
      // Only runs with a cost budget or under a spend limit pay for the estimate (it may read the history).
      if (run.limits.max_cost || limited) env.nextCall = await this.context.nextCallEstimate(run, ex, { always: limited });
      if (lastAgent !== undefined && run.status === 'queued') env.lastAgent = lastAgent;
      const before = run.mark();
      let d = run.decide(observation, env);
      // A model call holds its estimate against the spend limit before it starts; refused (the limit is
      // spent or held by calls in flight), the decision is taken back and the run waits for quota (CONTRACT 17).
      if (limited && d.effect.type === 'call_model') {
        const quota = await this.reserveFor(run, ex, d.effect.message_id, env.nextCall);
        if (quota.exceeded) {
          run.retract(before);
          d = run.decide(observation, { ...env, quota });
        }
      }
      // A redone observation stays to be redone until its decision commits (ends of subagents may conflict again and again).
      const redoing = redone;
      redone = undefined;
      observation = { type: 'tick', cancel_signalled: ex.cancelled };
      // A handoff (or a start with the session's last agent): the agent in control's version from here on.
      if (ex.agent && d.events.some((e) => e.type === 'handed_off' || (e.type === 'started' && e.agent))) await this.followAgent(run, ex);
      const step = await this.perform(run, ex, d);
      // A model call's end committed (its real cost with it), or it made none: what it held goes.
      if (ex.spendHeld) await this.releaseSpend(run, ex);
      if (step === true) continue;
      if (step !== false) return step;
      run = await this.reload(run.id);
      await this.followAgent(run, ex);
      const redo = this.redo.get(ex) ?? redoing;
      if (redo) {
        this.redo.delete(ex);
        observation = redo;
        redone = redo;
      }
    }
    throw new Error('loop guard exceeded');
  }

  /**
   * Performs a decision's effect and commits: true to decide again, false after a conflict, else
   * the execution's end. `run.started` and a cleared turn ride on the next write (a crash before
   * it redoes them), except that a client waits for `run.started`: it commits on its own.
   */
  private async perform(run: Run, ex: Execution, d: Decision): Promise<boolean | Exit> {
    const effect = d.effect;
    switch (effect.type) {
      case 'finish':
        if (run.hasChanges && !(await this.writer.commit(run, ex, d))) return false;
        return 'finished';
      case 'wait':
        return (await this.writer.save(run, ex)) ? 'waiting' : false;
      case 'open_approval': {
        const gate = this.approvals.gate!;
        const o = run.owner;
        const opened = await this.writer.save(run, ex, () => gate.open({ ...o, approvalId: effect.approval_id, call: effect.call, expiresAt: new Date(effect.expires_at) }));
        return opened ? 'waiting' : false;
      }
      case 'close_interrupted_turn': {
        // A turn that did not finish here (a cancel that landed mid-turn, a crash or lost lease).
        const content = await this.context.openMessageContent(effect.message_id);
        const closed = run.decide(scrubObservation({ type: 'interrupted_turn_read', message_id: effect.message_id, content }, ex.secrets ?? SecretScrubber.none), this.env.of(run, ex));
        return this.writer.closeTurn(run, ex, closed, effect.message_id);
      }
      case 'call_model': {
        const turn = await this.modelTurn.perform(run, ex, effect);
        if (!turn) return false;
        // Input steered while the model answered: known to the decider before it decides the turn's end.
        if (ex.steered) await this.takeSteered(run, ex);
        // The turn's spend (model_spend) rides on this commit: the repository writes the aggregate's unsaved spend.
        for (;;) {
          const before = run.mark();
          try {
            return await turn.writes.end(run.decide(scrubObservation(turn.observed(), ex.secrets ?? SecretScrubber.none), this.env.of(run, ex)));
          } catch (err) {
            if (!(err instanceof LeftoversArrived)) throw err;
            // Input arrived as the run was ending (the decider's take_leftovers): the end is
            // retracted and the turn decided again with it, so the run goes on and takes it.
            run.retract(before);
            run.decide({ type: 'input_steered', inputs: err.inputs }, this.env.of(run, ex));
          }
        }
      }
      case 'run_tool': {
        // The call's attempts (retries of retryable failures) until the decider says otherwise.
        for (let next = effect; ; ) {
          const observed = await this.toolCall.perform(run, ex, next);
          if (!observed) return false;
          const done = run.decide(observed, this.env.of(run, ex));
          // The tool answers by callback: the run waits (its wait commits like any other).
          if (done.effect.type === 'wait') return (await this.writer.save(run, ex)) ? 'waiting' : false;
          if (done.effect.type !== 'run_tool') return this.writer.commit(run, ex, done);
          next = done.effect;
        }
      }
      case 'start_subagent_run': {
        if (!this.subagents) throw new Error('subagents are not available here');
        const observed = await this.subagents.perform(run, ex, effect);
        if (!observed) return false;
        const committed = await this.writer.commit(run, ex, run.decide(observed, this.env.of(run, ex)));
        // Someone else committed meanwhile (a subagent's end, a cancel): the subagent exists, so its
        // start is decided again on the run as it is now, never left as an unknown outcome.
        if (committed === false) this.redo.set(ex, observed);
        return committed;
      }
      case 'continue':
      case 'resume':
      case 'none':
        // A cleared turn commits with the next write; anything else now.
        if (d.events.some((e) => e.type !== 'pending_cleared')) return this.writer.commit(run, ex, d);
        return true;
      default:
        return true;
    }
  }

  /** The agent in control when the session's previous run ended, with its pinned model; null: the run's own agent. */
  private async lastAgentOf(run: Run): Promise<HandoffTarget | null> {
    const p = run.propsForPersistence();
    const last = await this.runs.lastAgentOf(p.sessionId, { runId: p.id, createdAt: p.createdAt });
    if (!last || (last.id === p.agent.id && last.version === p.agent.version)) return null;
    const agent = await this.agents.findPinned(p.tenantId, last.id, last.version);
    return agent ? { id: agent.id, version: agent.version, model: agent.model } : null;
  }

  /** The execution uses the pinned version of the agent in control (its instructions and tools). */
  private async followAgent(run: Run, ex: Execution): Promise<void> {
    const cur = currentAgentOf(run.propsForPersistence());
    if (ex.agent && ex.agent.id === cur.id && ex.agent.version === cur.version) return;
    ex.agent = await this.agents.findPinned(run.owner.tenantId, cur.id, cur.version);
  }

  /** Steered inputs arrived (signal or heartbeat): the run's inbox is read and given to the decider. */
  private async takeSteered(run: Run, ex: Execution): Promise<Run> {
    ex.steered = false;
    const inbox = await this.runs.inboxOf(run.id);
    run.decide({ type: 'input_steered', inputs: inbox }, this.env.of(run, ex));
    return run;
  }

  private async reload(id: string): Promise<Run> {
    const run = await this.runs.findById(id);
    if (!run) throw new LeaseLost('run deleted');
    return run;
  }
}

/** The run's next decision may be a model call (no tool call open, no turn open): only then is the spend limit read. */
function nextIsModelTurn(run: Run): boolean {
  const s = run.propsForPersistence();
  return (s.status === 'running' || s.status === 'queued') && s.state.streaming_message_id === null && s.state.pending.every((p) => p.status === 'completed' || p.status === 'failed');
}
