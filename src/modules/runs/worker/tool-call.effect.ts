import { Injectable, Optional } from '@nestjs/common';
import { Metrics } from '../../../common/metrics/metrics';
import { sanitizeJson } from '../../../common/text/unsafe-text';
import { ToolOutcome, ToolRegistry } from '../../agents/domain/tool';
import { Run } from '../domain/run.aggregate';
import { Effect, Observation } from '../domain/run-decider';
import { Execution, LeaseLost } from './execution';
import { RunEnv } from './run-env';
import { DeferredStart, RunWriter } from './run-writer';
import { RunSecrets, scrubObservation } from '../application/run-secrets';
import { ResolvedSecret, SecretScrubber } from '../../../common/secrets/secret-scrubber';

/**
 * The effect `run_tool`: one attempt of a started call, returning `tool_finished` with its outcome
 * (untrusted JSON, sanitised). When the decider says the start must be durable first (a tool that
 * is not idempotent) it runs only once its `tool.started` is committed; otherwise it starts at
 * once and its start commits with its outcome or at FAST_TOOL_MS (`DeferredStart`). A retry first
 * sleeps the decider's backoff (a cancel ends the sleep: the tool then sees the abort). Null: the
 * start's commit met a version conflict (the caller reloads).
 */
@Injectable()
export class ToolCallEffect {
  constructor(
    private readonly tools: ToolRegistry,
    private readonly env: RunEnv,
    private readonly writer: RunWriter,
    private readonly secrets: RunSecrets,
    @Optional() private readonly metrics?: Metrics,
  ) {}

  /**
   * The tool resolved secret values for this call: known to the execution's scrubber at once and
   * recorded for the run (sealed) before the request goes out - a callback or anything else that
   * arrives later, on any node, is scrubbed of them too.
   */
  private async resolved(run: Run, ex: Execution, values: readonly ResolvedSecret[]): Promise<void> {
    const seen = (ex.recordedSecrets ??= new Set());
    const fresh = values.filter((v) => !seen.has(`${v.name}\u0000${v.value}`));
    if (fresh.length === 0) return;
    ex.secrets = (ex.secrets ?? SecretScrubber.none).with(fresh);
    await this.secrets.record({ tenantId: run.owner.tenantId, runId: run.id, sessionId: run.owner.sessionId }, fresh);
    for (const v of fresh) seen.add(`${v.name}\u0000${v.value}`);
  }

  async perform(run: Run, ex: Execution, effect: Extract<Effect, { type: 'run_tool' }>): Promise<Observation | null> {
    const o = run.owner;
    const call = effect.call;
    let start: DeferredStart | null = null;
    let startSave: Promise<boolean> | null = null;
    const tool = this.env.toolOf(ex, call.tool_name);
    if (effect.commit_start_first) {
      if (!(await this.writer.save(run, ex))) return null;
    } else {
      start = this.writer.deferStart(run, ex);
    }
    if (effect.delay_ms) await abortableSleep(effect.delay_ms, ex.abort.signal);
    const t0 = Date.now();
    const calledAt = performance.now();
    let raw: ToolOutcome;
    try {
      raw = await this.tools.execute(
        call.tool_name,
        call.arguments,
        {
          tenantId: o.tenantId,
          subjectId: o.subjectId,
          sessionId: o.sessionId,
          runId: o.runId,
          toolCallId: call.tool_call_id,
          idempotencyKey: `${o.runId}:${call.tool_call_id}`,
          attempt: call.attempt,
          signal: ex.abort.signal,
          deadline: run.deadline() ?? Date.now() + run.limits.timeout_ms,
          ...(effect.callback_token ? { callbackToken: effect.callback_token } : {}),
          secretsResolved: (values) => this.resolved(run, ex, values),
        },
        tool ?? undefined,
      );
    } finally {
      if (start) startSave = start.stop();
    }
    this.metrics?.recordToolCall(call.tool_name, raw.ok, (performance.now() - calledAt) / 1000);
    if (startSave !== null && !(await startSave)) return null;
    if (ex.leaseLost) throw new LeaseLost('lease lost');
    // Accepted: the result comes by callback (CONTRACT 17).
    if (raw.ok && raw.deferred) return { type: 'tool_deferred', tool_call_id: call.tool_call_id };
    const finished: Observation = { type: 'tool_finished', tool_call_id: call.tool_call_id, result: sanitizeJson(raw), duration_ms: Date.now() - t0, cancel_signalled: ex.cancelled };
    // The one scrubbing step (every value the run resolved, not only this call's).
    return scrubObservation(finished, ex.secrets ?? SecretScrubber.none);
  }
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
