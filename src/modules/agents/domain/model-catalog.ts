/** The providers a model entry can name (CONTRACT section 18). */
export const MODEL_PROVIDERS = ['openai', 'openai_responses', 'anthropic', 'google', 'bedrock', 'openai_compatible', 'scripted'] as const;
export type ModelProviderKind = (typeof MODEL_PROVIDERS)[number];

/** USD per million tokens, as decimal strings (parsed from the operator's numbers without binary rounding). */
export interface ModelPrice {
  input_per_mtok: string;
  output_per_mtok: string;
  cached_input_per_mtok?: string;
}

/** One configured model: what agents and runs name by `id`. `apiKey` is resolved and never leaves the process. */
export interface ModelEntry {
  id: string;
  provider: ModelProviderKind;
  /** The provider's own model name. */
  model: string;
  baseUrl?: string;
  /** The resolved key (from `${env:NAME}`); absent when the provider takes none or reads its own environment. */
  apiKey?: string;
  contextWindow?: number;
  /** The most output tokens one call may produce (sent to the provider as its limit); absent: DEFAULT_MAX_OUTPUT_TOKENS. */
  maxOutputTokens?: number;
  price?: ModelPrice;
}

/**
 * A call's output bound when the entry names none: what `limits.max_cost`'s pre-call check
 * prices a call's output at (CONTRACT 18). 4096 is the common default output cap of the hosted
 * APIs; an entry with a larger or smaller cap says so with `max_output_tokens`.
 */
export const DEFAULT_MAX_OUTPUT_TOKENS = 4096;

export function maxOutputTokensOf(entry: Pick<ModelEntry, 'maxOutputTokens'> | null | undefined): number {
  return entry?.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS;
}

/** Port: the model registry (MODELS_FILE or the default list). */
export abstract class ModelCatalog {
  abstract list(): readonly ModelEntry[];
  abstract get(id: string): ModelEntry | null;
}
