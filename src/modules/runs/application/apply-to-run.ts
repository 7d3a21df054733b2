import { Injectable } from '@nestjs/common';
import { canSee, Principal } from '../../../common/auth/principal';
import { Clock } from '../../../common/clock/clock';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { retryOnConflict } from '../../../common/errors/retry-on-conflict';
import { newId } from '../../../common/ids/ids';
import { Run } from '../domain/run.aggregate';
import { DecideEnv, Decision, Observation } from '../domain/run-decider';
import { RunRepository } from '../domain/run.repository';
import { runNotFound } from './load-owned-run';
import { RunPersistence } from './run-persistence';
import { RunSignals } from './run-signals';
import { carriesOutsideText, RunSecrets, scrubObservation } from './run-secrets';
import { SecretScrubber } from '../../../common/secrets/secret-scrubber';

/** Tries of one change before its conflict is the caller's (each reads the run again). */
const ATTEMPTS = 10;

export interface ApplyOptions {
  /** The caller must be able to see the run: otherwise exactly the 404 of a missing id. */
  principal?: Principal;
  /** Writes of the same commit besides the run's (after the session and run rows are locked). */
  alsoWrite?: (run: Run, decision: Decision, observation: Observation) => Promise<void>;
  /** The decider's environment besides the clock and ids (the agent's tools, approvals). */
  env?: Omit<DecideEnv, 'now' | 'newId'>;
  /** The run's secret scrubber when the caller read it already (its companions were scrubbed with it): not read again. */
  scrubber?: SecretScrubber;
}

export interface Applied {
  run: Run;
  decision: Decision;
}

/**
 * The one way into a run for everything that is not its own executor's step: load -> decide ->
 * one guarded commit -> on a version conflict (the executor or another request committed in
 * between) read and decide again. Cancel, interrupt, approval decisions and expiry, client tool
 * outputs, queue expiry and an unexpected failure are each an observation here; what they do is
 * the decider's. After commit it wakes whoever must act on the decision (a resumed run, a cancel).
 */
@Injectable()
export class ApplyToRun {
  constructor(
    private readonly runs: RunRepository,
    private readonly persistence: RunPersistence,
    private readonly signals: RunSignals,
    private readonly uow: UnitOfWork,
    private readonly clock: Clock,
    private readonly secrets: RunSecrets,
  ) {}

  /** Null when the run does not exist (only without `principal`: with it, 404 `run_not_found`). */
  async apply(runId: string, observation: Observation, options: ApplyOptions = {}): Promise<Applied | null> {
    // Only the run's own version is retried here: another row's conflict (an approval decided
    // meanwhile) is its owner's to answer.
    // Scrubbed once (the run's resolved values do not change between tries of one observation).
    const scrubbed: { observation?: Observation } = {};
    return retryOnConflict(() => this.once(runId, observation, options, scrubbed), { attempts: ATTEMPTS, retries: (c) => c.resource === 'run' });
  }

  private async once(runId: string, raw: Observation, options: ApplyOptions, scrubbed: { observation?: Observation }): Promise<Applied | null> {
    const run = await this.runs.findById(runId);
    const o = run?.owner;
    if (!run || !o || (options.principal && !canSee(options.principal, { tenantId: o.tenantId, subjectId: o.subjectId }))) {
      if (options.principal) throw runNotFound(runId);
      return null;
    }
    const observation = (scrubbed.observation ??= options.scrubber ? scrubObservation(raw, options.scrubber) : await this.scrub(o.tenantId, runId, raw));
    const decision = run.decide(observation, { tool: () => null, ...options.env, now: this.clock.now(), newId });
    if (!run.hasChanges) return { run, decision };
    const also = options.alsoWrite;
    // `observation` as decided: scrubbed (a companion row written with it stores what the run saw).
    await this.persistence.save(run, also ? () => also(run, decision, observation) : undefined);
    const cancelling = run.status === 'cancelling' && decision.events.some((e) => e.type === 'cancel_requested');
    if (cancelling) this.uow.afterCommit(() => this.signals.cancelRequested(runId));
    if (decision.effect.type === 'resume') this.uow.afterCommit(() => this.signals.workAvailable());
    return { run, decision };
  }

  /** The one scrubbing step for what arrives from outside the run's execution (see `scrubObservation`). */
  private async scrub(tenantId: string, runId: string, o: Observation): Promise<Observation> {
    if (!carriesOutsideText(o)) return o;
    const runIds = [runId];
    // A subagent's text and approvals: scrubbed of what the subagent's run resolved too.
    if (o.type === 'subagent_ended') runIds.push(o.outcome.run_id);
    if (o.type === 'subagent_approval_requested') runIds.push(o.approval.run_id);
    return scrubObservation(o, await this.scrubberFor(tenantId, runIds));
  }

  /** Every value the runs resolved, as a scrubber (for an observation's companions written in the same commit). */
  scrubberFor(tenantId: string, runIds: string[]): Promise<SecretScrubber> {
    return this.secrets.scrubberOf(tenantId, runIds);
  }
}
