import { APICallError } from '@ai-sdk/provider';
import { ModelError } from '../../domain/model-provider';

/** The longest provider message we repeat in a run's error (provider bodies can be large). */
const MAX_MESSAGE = 300;

/**
 * How providers word "the prompt does not fit": OpenAI and vLLM (`context_length_exceeded`,
 * "maximum context length"), Anthropic ("prompt is too long"), Gemini ("input token count ...
 * exceeds the maximum"), Bedrock ("Input is too long"), Ollama/llama.cpp ("exceeds the context").
 */
const CONTEXT_RE = /context_length_exceeded|maximum context length|context window|prompt is too long|input is too long|too many (input )?tokens|input token count.*exceeds|exceeds? the (model's )?(context|maximum)/i;
/** Overload words of providers that do not answer 429 (Anthropic 529 `overloaded_error`, Bedrock ThrottlingException). */
const OVERLOAD_RE = /overloaded|throttl|rate.?limit|too many requests|resource.?exhausted/i;

/** A provider's failure, classified: what we tell the run and whether a retry can help. */
export interface MappedModelError {
  error: ModelError;
  /** Retried (with backoff) when no output was given yet. */
  retry: boolean;
  /** Milliseconds the provider asked us to wait (retry-after-ms / retry-after), when it said. */
  retryAfterMs?: number;
}

function short(s: string): string {
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > MAX_MESSAGE ? `${t.slice(0, MAX_MESSAGE)}...` : t;
}

/** The provider's own message from an error body (OpenAI/Anthropic `{error: {message}}`, Gemini `{error: {message, status}}`, Bedrock `{message}`). */
function bodyMessage(body: string | undefined): string | null {
  if (!body) return null;
  try {
    const j = JSON.parse(body) as { error?: { message?: unknown; type?: unknown; code?: unknown } | string; message?: unknown };
    if (typeof j.error === 'string') return j.error;
    if (j.error && typeof j.error.message === 'string') return j.error.message;
    if (typeof j.message === 'string') return j.message;
  } catch {
    /* not JSON: the body itself */
  }
  return body;
}

/** `retry-after-ms` or `retry-after` (seconds or an HTTP date), as milliseconds. */
export function retryAfterMs(headers: Record<string, string> | undefined, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = headers['retry-after-ms'];
  if (ms !== undefined && Number.isFinite(Number(ms)) && Number(ms) >= 0) return Number(ms);
  const ra = headers['retry-after'];
  if (ra === undefined) return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(ra)) return Math.round(Number(ra) * 1000);
  const at = Date.parse(ra);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}

/** The text of a mid-stream error part (providers send `{type: 'error', error: {...}}` objects, not Errors). */
function describe(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'string') return err;
  try {
    return JSON.stringify(err);
  } catch {
    return String(err);
  }
}

/**
 * Maps whatever a provider call failed with to our run-level codes (CONTRACT 18): 429/overload
 * -> `model_rate_limited` (retried first), context too long -> `context_length_exceeded` (never
 * retried), 401/403 -> `model_auth_failed`, 5xx, 408, a refused connection or a cut stream ->
 * `model_error` (retried when nothing was streamed yet), other 4xx -> `model_error`.
 */
export function mapModelError(err: unknown): MappedModelError {
  if (err instanceof ModelError) return { error: err, retry: false };
  if (APICallError.isInstance(err)) {
    const status = err.statusCode;
    const text = bodyMessage(err.responseBody) ?? err.message;
    const what = `the model provider answered HTTP ${status ?? '?'}: ${short(text)}`;
    if (CONTEXT_RE.test(text)) return { error: new ModelError('context_length_exceeded', what, false), retry: false };
    if (status === 401 || status === 403) return { error: new ModelError('model_auth_failed', what, false), retry: false };
    const after = retryAfterMs(err.responseHeaders);
    if (status === 429 || status === 529 || (status !== undefined && status >= 500 && OVERLOAD_RE.test(text))) {
      return { error: new ModelError('model_rate_limited', what, true), retry: true, ...(after !== undefined ? { retryAfterMs: after } : {}) };
    }
    if (status === undefined || status === 408 || status >= 500) {
      return { error: new ModelError('model_error', what, true), retry: true, ...(after !== undefined ? { retryAfterMs: after } : {}) };
    }
    return { error: new ModelError('model_error', what, false), retry: false };
  }
  // Not an HTTP answer: a mid-stream error event (Anthropic `overloaded_error`, OpenAI
  // `rate_limit_exceeded`), a cut stream, or a chunk the SDK could not parse. Classified by its
  // text, but the run is told in our words: the text may be internal (a schema dump, a TypeError).
  const text = describe(err);
  if (CONTEXT_RE.test(text)) return { error: new ModelError('context_length_exceeded', "the prompt does not fit the model's context window", false), retry: false };
  if (OVERLOAD_RE.test(text)) return { error: new ModelError('model_rate_limited', 'the model provider is overloaded', true), retry: true };
  if (/unauthori[sz]ed|invalid[ _-]?api[ _-]?key|authentication|permission denied|access denied/i.test(text)) {
    return { error: new ModelError('model_auth_failed', 'the model provider refused the credentials', false), retry: false };
  }
  return { error: new ModelError('model_error', 'the model call failed', true), retry: true };
}
