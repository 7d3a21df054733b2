import { Injectable, Logger, Optional } from '@nestjs/common';
import { ConcurrencyConflict, DomainError } from '../../../common/errors/domain-error';
import { newId } from '../../../common/ids/ids';
import { Metrics } from '../../../common/metrics/metrics';
import { sanitizeJson, sanitizeText, TextDeltaSanitizer } from '../../../common/text/unsafe-text';
import { ModelError, ModelRouter, ModelStreamEvent } from '../../agents/domain/model-provider';
import { callCost } from '../../usage/domain/money';
import { Run } from '../domain/run.aggregate';
import { Effect, ModelTurnOutcome, Observation, TurnUsage } from '../domain/run-decider';
import { RunErrorCode } from '../domain/run-status';
import { Execution, LeaseLost } from './execution';
import { SecretScrubber } from '../../../common/secrets/secret-scrubber';
import { RunEnv } from './run-env';
import { RunWriter, TurnWrites } from './run-writer';
import { TurnContext } from './turn-context';

/** A model call that was made: what the decider is told of it, and the turn's writes that commit its end. */
export interface ModelTurn {
  /** The observation `model_turn_ended`, as of now (an abort or cancel may still land until the decider is asked). */
  observed(): Observation;
  writes: TurnWrites;
  usage: TurnUsage;
  messageId: string;
}

/**
 * The effect `call_model`: one streamed model call. Its context (read once per execution), the
 * tools and attachments it is offered, the deltas streamed (untrusted text, sanitised) through the
 * turn's writes, and its outcome: text, tool calls, usage priced, or the failure. Null: a write of
 * the turn met a version conflict (the caller reloads). Commits nothing but streamed text.
 */
@Injectable()
export class ModelTurnEffect {
  private readonly logger = new Logger('RunExecutor');

  constructor(
    private readonly models: ModelRouter,
    private readonly env: RunEnv,
    private readonly context: TurnContext,
    private readonly writer: RunWriter,
    @Optional() private readonly metrics?: Metrics,
  ) {}

  async perform(run: Run, ex: Execution, effect: Extract<Effect, { type: 'call_model' }>): Promise<ModelTurn | null> {
    const snap = run.propsForPersistence();
    const messageId = effect.message_id;
    // Inputs steered into this turn: the history is read again (they sit before its message).
    if (run.unsavedEvents.some((e) => e.type === 'run.input')) ex.context = undefined;
    const deadline = run.deadline() ?? Date.now() + run.limits.timeout_ms;
    let writes: TurnWrites | undefined;
    try {
      const messages = ex.context ?? (await this.context.read(run));
      const tools = this.env.toolSpecs(run, ex);
      const attachments = await this.context.attachmentsOf({ tenantId: snap.tenantId, subjectId: snap.subjectId }, messages);
      const turn = (writes = this.writer.turn(run, ex, messageId, messages));
      let text = '';
      const toolCalls: ModelTurnOutcome['tool_calls'] = [];
      let usage: TurnUsage = { input_tokens: 0, output_tokens: 0, cached_input_tokens: 0 };
      const callSignal = AbortSignal.any([ex.abort.signal, AbortSignal.timeout(Math.max(1, deadline - Date.now()))]);
      // Armed when the model is called: the delay is the model's, not the turn's reads'.
      turn.armStart();
      let failure: { code: RunErrorCode; message: string } | null = null;
      const calledAt = performance.now();
      try {
        const stream = this.models.forModel(snap.model).stream({
          model: snap.model,
          runId: snap.id,
          callIndex: effect.call_index,
          instructions: ex.agent?.instructions ?? '',
          messages,
          tools,
          attachments,
          signal: callSignal,
          deadline,
        });
        // Model output is untrusted text: U+0000 and lone surrogates cannot be stored by PostgreSQL
        // (U+FFFD instead); a surrogate pair split between two deltas stays one character.
        const clean = new TextDeltaSanitizer();
        // The model's text is scrubbed of the run's resolved secrets as it streams: a value split
        // between two deltas is masked whole (its possible start waits for the next delta).
        const scrub = (ex.secrets ?? SecretScrubber.none).stream();
        for await (const ev of stream as AsyncIterable<ModelStreamEvent>) {
          if (ex.leaseLost) throw new LeaseLost('lease lost');
          if (ev.type === 'text_delta') {
            const delta = scrub.push(clean.push(ev.text));
            text += delta;
            if (delta) await turn.push(delta);
          } else if (ev.type === 'tool_call') {
            toolCalls.push({ id: ev.id ?? newId('call'), name: sanitizeText(ev.name), arguments: sanitizeJson(ev.arguments ?? {}) });
          } else if (ev.type === 'usage') {
            const tokens = { input_tokens: ev.input_tokens, output_tokens: ev.output_tokens, cached_input_tokens: ev.cached_input_tokens ?? 0 };
            usage = { ...tokens, reasoning_tokens: ev.reasoning_tokens ?? 0, cost: callCost(this.context.priceOf(snap.model), tokens) };
          }
          if (callSignal.aborted) break;
        }
        // An aborted stream was cut: a value's start at its end is masked like at any cut.
        const tail = scrub.push(clean.end()) + scrub.end(callSignal.aborted);
        if (tail) {
          text += tail;
          await turn.push(tail);
        }
        if (callSignal.aborted && !ex.leaseLost && Date.now() >= deadline) failure = { code: 'model_timeout', message: 'the run deadline passed during the model call' };
      } catch (err) {
        if (err instanceof LeaseLost || ex.leaseLost) throw new LeaseLost('lease lost');
        if (err instanceof ConcurrencyConflict) {
          turn.cancel();
          return null;
        }
        if (err instanceof DomainError) failure = { code: 'model_error', message: err.message };
        else if (err instanceof ModelError) failure = { code: err.code, message: err.message };
        else if (callSignal.aborted) failure = Date.now() >= deadline ? { code: 'model_timeout', message: 'the run deadline passed during the model call' } : null;
        else {
          // Not a model's answer but a failure of ours or of the provider client: the run says so
          // generically (its text may be internal: "Maximum call stack size exceeded"); the log has it.
          this.logger.error(`model call of ${snap.id} failed: ${(err as Error)?.stack ?? String(err)}`);
          failure = { code: 'model_error', message: 'the model call failed' };
        }
      }
      this.metrics?.recordModelCall(snap.model, failure ? failure.code : ex.cancelled ? 'cancelled' : 'ok', (performance.now() - calledAt) / 1000);
      // The tail that is still buffered is written with the completion (one transaction).
      turn.disarm();
      let rest = '';
      try {
        rest = await turn.takeRest();
      } catch (err) {
        if (err instanceof ConcurrencyConflict) return null;
        throw err;
      }
      if (ex.leaseLost) throw new LeaseLost('lease lost');
      if (rest) run.streamDelta(messageId, rest);
      const outcome = { message_id: messageId, text, tool_calls: toolCalls, usage, failure };
      return {
        observed: () => ({ type: 'model_turn_ended', ...outcome, aborted: callSignal.aborted, cancel_signalled: ex.cancelled }),
        writes: turn,
        usage,
        messageId,
      };
    } finally {
      writes?.disarm();
    }
  }
}
