import type { LanguageModelV4, LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { exceedsJsonDepth } from '../../../../common/text/json-depth';
import { ModelEntry } from '../../domain/model-catalog';
import { ModelError, ModelProvider, ModelRequest, ModelStreamEvent } from '../../domain/model-provider';
import { AbortedError, estimateTokens, sleep, withDeadline } from '../abort';
import { toProviderPrompt, toProviderTools } from './ai-sdk-prompt';
import { mapModelError } from './model-error-mapping';
import { inputChars } from './scripted-model-provider';

/** Retry policy of model calls refused before any output (429, overload, 5xx, connection). */
export interface ModelRetryPolicy {
  maxRetries: number;
  baseDelayMs: number;
}

/** Longest wait a provider's retry-after may impose per retry; a longer one fails the call (the run's deadline keeps running). */
const MAX_RETRY_WAIT_MS = 60_000;

/**
 * The AI SDK language model for a registry entry (the provider packages build the wire requests).
 * Each provider package is loaded when the first model of its kind is built, not at start-up: all
 * five cost ~250 ms and ~27 MiB, and the default configuration (the scripted model) uses none.
 */
export function languageModelOf(entry: ModelEntry): LanguageModelV4 {
  const common = { ...(entry.baseUrl ? { baseURL: entry.baseUrl } : {}), ...(entry.apiKey ? { apiKey: entry.apiKey } : {}) };
  /* eslint-disable @typescript-eslint/no-require-imports */
  switch (entry.provider) {
    case 'openai':
      return (require('@ai-sdk/openai') as typeof import('@ai-sdk/openai')).createOpenAI(common).chat(entry.model);
    case 'openai_responses':
      return (require('@ai-sdk/openai') as typeof import('@ai-sdk/openai')).createOpenAI(common).responses(entry.model);
    case 'anthropic':
      return (require('@ai-sdk/anthropic') as typeof import('@ai-sdk/anthropic')).createAnthropic(common)(entry.model);
    case 'google':
      return (require('@ai-sdk/google') as typeof import('@ai-sdk/google')).createGoogleGenerativeAI(common)(entry.model);
    case 'bedrock':
      // Credentials: an api_key is a Bedrock API key; else the AWS SDK's environment variables (AWS_REGION, AWS_ACCESS_KEY_ID, ...).
      return (require('@ai-sdk/amazon-bedrock') as typeof import('@ai-sdk/amazon-bedrock')).createAmazonBedrock(common)(entry.model);
    case 'openai_compatible':
      return (require('@ai-sdk/openai-compatible') as typeof import('@ai-sdk/openai-compatible')).createOpenAICompatible({ name: entry.id, baseURL: entry.baseUrl!, ...(entry.apiKey ? { apiKey: entry.apiKey } : {}), includeUsage: true })(entry.model);
    case 'scripted':
      throw new Error('the scripted model is not an AI SDK model');
  }
  /* eslint-enable @typescript-eslint/no-require-imports */
}

/** Tool-call input the SDK could not parse stays text, so the tool registry answers invalid_tool_arguments. */
function toolArguments(input: unknown): unknown {
  if (typeof input === 'string') {
    if (input.trim() === '') return {};
    if (exceedsJsonDepth(input)) return input;
    try {
      return JSON.parse(input);
    } catch {
      return input;
    }
  }
  return input ?? {};
}

/**
 * One configured model through the AI SDK's provider packages: text deltas as they arrive, tool
 * calls (parallel ones too) when complete, usage (cached and reasoning tokens) at the end. Calls
 * refused before any output are retried with backoff honouring `retry-after`; the call's signal
 * aborts the upstream request (the connection is closed).
 *
 * It calls the provider's `doStream` (the provider specification, V4) with a prompt converted here
 * (ai-sdk-prompt.ts), not `streamText`: a single model step needs none of `streamText`'s step
 * machinery, tool execution, telemetry or stream transforms, which cost about as much CPU again as
 * the provider's HTTP and parsing (bench/README.md, "what a real model call costs").
 */
export class AiSdkModelProvider extends ModelProvider {
  private readonly model: LanguageModelV4;

  constructor(
    private readonly entry: ModelEntry,
    private readonly retry: ModelRetryPolicy,
    model?: LanguageModelV4,
  ) {
    super();
    this.model = model ?? languageModelOf(entry);
  }

  async *stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
    const guard = withDeadline(request.signal, request.deadline);
    const stopped = () => new ModelError('model_timeout', guard.deadlineHit() ? 'the model call passed the run deadline' : 'the model call was aborted');
    try {
      const call: LanguageModelV4CallOptions = {
        prompt: toProviderPrompt(request.instructions, request.messages, request.attachments),
        ...(request.tools.length ? { tools: toProviderTools(request.tools), toolChoice: { type: 'auto' } } : {}),
        // The entry's output cap is the provider's limit too, so max_cost's estimate bounds the call.
        ...(this.entry.maxOutputTokens ? { maxOutputTokens: this.entry.maxOutputTokens } : {}),
        abortSignal: guard.signal,
      };
      for (let attempt = 0; ; attempt++) {
        if (guard.signal.aborted) throw stopped();
        let yielded = false;
        try {
          for await (const ev of this.once(request, call)) {
            yielded = true;
            yield ev;
          }
          return;
        } catch (err) {
          if (guard.signal.aborted) throw stopped();
          const mapped = mapModelError(err);
          if (!mapped.retry || yielded || attempt >= this.retry.maxRetries) throw mapped.error;
          const wait = mapped.retryAfterMs ?? this.retry.baseDelayMs * 2 ** attempt;
          // A wait the provider asks for that outlasts the run's deadline cannot succeed: fail now.
          if (wait > MAX_RETRY_WAIT_MS || Date.now() + wait >= request.deadline) throw mapped.error;
          try {
            await sleep(wait, guard.signal);
          } catch (e) {
            if (e instanceof AbortedError) throw stopped();
            throw e;
          }
        }
      }
    } finally {
      guard.dispose();
    }
  }

  /** One call: the provider's stream as our events; a provider failure is thrown (mapped by the caller). */
  private async *once(request: ModelRequest, call: LanguageModelV4CallOptions): AsyncIterable<ModelStreamEvent> {
    const { stream } = await this.model.doStream(call);
    let outChars = 0;
    let finish: { unified: string; raw: string | undefined } | null = null;
    let usage: ModelStreamEvent | null = null;
    const calls: ModelStreamEvent[] = [];
    for await (const part of stream) {
      switch (part.type) {
        case 'text-delta':
          if (part.delta) {
            outChars += part.delta.length;
            yield { type: 'text_delta', text: part.delta };
          }
          break;
        case 'tool-call': {
          const args = toolArguments(part.input);
          outChars += part.toolName.length + JSON.stringify(args ?? {}).length;
          calls.push({ type: 'tool_call', ...(part.toolCallId ? { id: part.toolCallId } : {}), name: part.toolName, arguments: args });
          break;
        }
        case 'finish': {
          finish = part.finishReason;
          const u = part.usage;
          if (u.inputTokens.total !== undefined || u.outputTokens.total !== undefined) {
            usage = {
              type: 'usage',
              input_tokens: u.inputTokens.total ?? 0,
              output_tokens: u.outputTokens.total ?? 0,
              cached_input_tokens: u.inputTokens.cacheRead ?? 0,
              reasoning_tokens: u.outputTokens.reasoning ?? 0,
            };
          }
          break;
        }
        case 'error':
          throw part.error;
        default:
          break;
      }
    }
    // A stream that ended without the provider's finish (no finish_reason / stop_reason /
    // response.completed) was cut: the providers then report "other" with no raw reason, or nothing.
    if (finish === null || (finish.unified === 'other' && finish.raw === undefined)) throw new ModelError('model_error', 'the model stream ended early', true);
    if (finish.unified === 'content-filter' && calls.length === 0) throw new ModelError('model_refusal', 'the model output was blocked by the content filter');
    for (const c of calls) yield c;
    yield usage ?? {
      type: 'usage',
      input_tokens: estimateTokens(inputChars(request.messages) + request.instructions.length),
      output_tokens: estimateTokens(outChars),
    };
  }

  get id(): string {
    return this.entry.id;
  }
}
