import { DomainError } from '../../../common/errors/domain-error';

/** Content parts of messages (CONTRACT section 6), as the loop stores them and models read them. */
export type ContentPart =
  | { type: 'text'; text: string }
  | { type: 'attachment_ref'; attachment_id: string }
  | { type: 'tool_call'; tool_call_id: string; tool_name: string; arguments: unknown }
  | { type: 'tool_result'; tool_call_id: string; tool_name: string; ok: boolean; result?: unknown; error?: { code: string; message: string } };

export interface ModelMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: ContentPart[];
}

/** What the model is told about a tool. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>; // JSON Schema
}

/** Attachment content resolved for the model (text inline and bounded, images as data, others by metadata). */
export interface ModelAttachment {
  attachment_id: string;
  filename: string;
  media_type: string;
  size_bytes: number;
  text?: string; // text types, bounded
  image_base64?: string; // images, for providers that take them
}

export interface ModelRequest {
  model: string;
  runId: string;
  /** 0-based index of this model call within the run (the scripted model consumes turn #callIndex). */
  callIndex: number;
  instructions: string;
  messages: ModelMessage[];
  tools: ToolSpec[];
  attachments: ModelAttachment[];
  /** Aborted on cancel or when the run's deadline passes. */
  signal: AbortSignal;
  /** Epoch ms after which the call must have stopped. */
  deadline: number;
}

export type ModelStreamEvent =
  | { type: 'text_delta'; text: string }
  | { type: 'tool_call'; id?: string; name: string; arguments: unknown }
  | { type: 'usage'; input_tokens: number; output_tokens: number; cached_input_tokens?: number; reasoning_tokens?: number };

/** Run-level codes a model call can fail with (CONTRACT sections 2 and 18). */
export type ModelErrorCode = 'model_error' | 'model_timeout' | 'model_refusal' | 'model_rate_limited' | 'context_length_exceeded' | 'model_auth_failed';

/** A failed model call; `code` is a run-level error code. */
export class ModelError extends Error {
  constructor(
    readonly code: ModelErrorCode,
    message: string,
    readonly retryable = false,
  ) {
    super(message);
    this.name = 'ModelError';
  }
}

/** Port: one streamed model call. Throws ModelError; stops promptly when `signal` aborts. */
export abstract class ModelProvider {
  abstract stream(request: ModelRequest): AsyncIterable<ModelStreamEvent>;
}

/** Picks the provider for a model id of the model registry (CONTRACT section 18). */
export abstract class ModelRouter {
  abstract forModel(model: string): ModelProvider;
}

export function unknownModel(model: string): DomainError {
  return new DomainError('invalid_request', `unknown model "${model}"`, { errors: [{ field: 'model', message: 'unknown model' }] });
}

/**
 * Token estimate when a provider reports none (the scripted model, a stream cut before its usage)
 * and of a call not made yet (`limits.max_cost`): 1 token per 4 characters, rounded up.
 */
export function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

/** Characters the model "reads": every text part, and the JSON of every other part. */
export function inputChars(messages: ModelMessage[]): number {
  let n = 0;
  for (const m of messages) for (const p of m.content) n += p.type === 'text' ? p.text.length : JSON.stringify(p).length;
  return n;
}
