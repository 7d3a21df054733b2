import { Injectable, Logger } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { AppConfig } from '../../../../common/config/app-config';
import { MODEL_PROVIDERS, ModelCatalog, ModelEntry, ModelPrice, ModelProviderKind } from '../../domain/model-catalog';

export const SCRIPTED_MODEL = 'scripted';

/**
 * The scripted model's price: small round figures so budgets and spend limits are testable offline
 * (1 USD per million input tokens, 2 per million output tokens, 0.5 per million cached).
 */
export const SCRIPTED_PRICE: ModelPrice = { input_per_mtok: '1', output_per_mtok: '2', cached_input_per_mtok: '0.5' };

const ENTRY_KEYS = new Set(['id', 'provider', 'model', 'base_url', 'api_key', 'context_window', 'max_output_tokens', 'price']);
const PRICE_KEYS = new Set(['input_per_mtok', 'output_per_mtok', 'cached_input_per_mtok']);
const ID_RE = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/;
const ENV_REF_RE = /^\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}$/;
/** Largest price accepted: 1,000,000 USD per million tokens (a typo guard, not a business rule). */
const MAX_PRICE = 1_000_000;

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A JSON number as the decimal string it was written as (String() gives the shortest exact form, never binary noise). */
function priceString(v: unknown, at: string, problems: string[]): string | undefined {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > MAX_PRICE) {
    problems.push(`${at} must be a number 0..${MAX_PRICE} (USD per million tokens)`);
    return undefined;
  }
  const s = String(v);
  // Exponent forms (1e-7) are written out so decimal parsing downstream stays plain.
  return /e/i.test(s) ? v.toFixed(20).replace(/\.?0+$/, '') : s;
}

/**
 * Validates a MODELS_FILE array and resolves its `${env:NAME}` keys from `env`. Every problem is
 * listed (not just the first), each naming the entry and field.
 */
export function parseModelEntries(raw: unknown, env: NodeJS.ProcessEnv): { entries: ModelEntry[]; problems: string[] } {
  const problems: string[] = [];
  const entries: ModelEntry[] = [];
  if (!Array.isArray(raw)) return { entries, problems: ['must be a JSON array of model entries'] };
  if (raw.length === 0) problems.push('must list at least one model');
  const seen = new Set<string>();
  raw.forEach((item, i) => {
    const at = `[${i}]`;
    if (!isObject(item)) {
      problems.push(`${at} must be an object`);
      return;
    }
    const before = problems.length;
    const unknown = Object.keys(item).filter((k) => !ENTRY_KEYS.has(k));
    if (unknown.length) problems.push(`${at} has unknown keys: ${unknown.join(', ')}`);
    const id = item.id;
    if (typeof id !== 'string' || !ID_RE.test(id)) problems.push(`${at}.id must match ${ID_RE.source}`);
    else if (seen.has(id)) problems.push(`${at}.id "${id}" is listed twice`);
    else seen.add(id);
    const provider = item.provider;
    if (typeof provider !== 'string' || !(MODEL_PROVIDERS as readonly string[]).includes(provider)) {
      problems.push(`${at}.provider must be one of: ${MODEL_PROVIDERS.join(', ')}`);
    }
    if (typeof item.model !== 'string' || item.model.trim() === '' || item.model.length > 256) problems.push(`${at}.model must be a non-empty string (the provider's model name)`);
    if (item.base_url !== undefined) {
      let ok = false;
      if (typeof item.base_url === 'string') {
        try {
          ok = ['http:', 'https:'].includes(new URL(item.base_url).protocol);
        } catch {
          ok = false;
        }
      }
      if (!ok) problems.push(`${at}.base_url must be an http(s) URL`);
    }
    if (provider === 'openai_compatible' && item.base_url === undefined) problems.push(`${at}.base_url is required for provider openai_compatible`);
    let apiKey: string | undefined;
    if (item.api_key !== undefined) {
      const m = typeof item.api_key === 'string' ? ENV_REF_RE.exec(item.api_key) : null;
      if (!m) problems.push(`${at}.api_key must be "\${env:NAME}" (keys are never written in the file)`);
      else {
        apiKey = env[m[1]]?.trim();
        if (!apiKey) problems.push(`${at}.api_key names \${env:${m[1]}}, which is not set`);
      }
    }
    if (item.context_window !== undefined && !(Number.isInteger(item.context_window) && (item.context_window as number) > 0)) {
      problems.push(`${at}.context_window must be a positive integer`);
    }
    if (item.max_output_tokens !== undefined && !(Number.isInteger(item.max_output_tokens) && (item.max_output_tokens as number) > 0)) {
      problems.push(`${at}.max_output_tokens must be a positive integer`);
    }
    let price: ModelPrice | undefined;
    if (item.price !== undefined) {
      if (!isObject(item.price)) problems.push(`${at}.price must be an object`);
      else {
        const p = item.price;
        const extra = Object.keys(p).filter((k) => !PRICE_KEYS.has(k));
        if (extra.length) problems.push(`${at}.price has unknown keys: ${extra.join(', ')}`);
        const input = priceString(p.input_per_mtok, `${at}.price.input_per_mtok`, problems);
        const output = priceString(p.output_per_mtok, `${at}.price.output_per_mtok`, problems);
        const cached = p.cached_input_per_mtok === undefined ? undefined : priceString(p.cached_input_per_mtok, `${at}.price.cached_input_per_mtok`, problems);
        if (input !== undefined && output !== undefined) price = { input_per_mtok: input, output_per_mtok: output, ...(cached !== undefined ? { cached_input_per_mtok: cached } : {}) };
      }
    }
    if (problems.length > before) return;
    entries.push({
      id: id as string,
      provider: provider as ModelProviderKind,
      model: (item.model as string).trim(),
      ...(typeof item.base_url === 'string' ? { baseUrl: item.base_url.replace(/\/+$/, '') } : {}),
      ...(apiKey ? { apiKey } : {}),
      ...(item.context_window !== undefined ? { contextWindow: item.context_window as number } : {}),
      ...(item.max_output_tokens !== undefined ? { maxOutputTokens: item.max_output_tokens as number } : {}),
      ...(price ? { price } : {}),
    });
  });
  return { entries, problems };
}

/** The variables the entries' `api_key`s name. */
function keyVariables(raw: unknown): string[] {
  if (!Array.isArray(raw)) return [];
  return raw.flatMap((e) => {
    const m = isObject(e) && typeof e.api_key === 'string' ? ENV_REF_RE.exec(e.api_key) : null;
    return m ? [m[1]] : [];
  });
}

/**
 * The default list: the priced scripted model, plus the pre-registry configuration
 * (OPENAI_BASE_URL + OPENAI_MODEL, OPENAI_API_KEY) as an OpenAI-compatible entry so existing
 * deployments keep working.
 */
export function defaultModelEntries(config: Pick<AppConfig, 'openaiBaseUrl' | 'openaiModel' | 'openaiApiKey'>): ModelEntry[] {
  const list: ModelEntry[] = [{ id: SCRIPTED_MODEL, provider: 'scripted', model: SCRIPTED_MODEL, price: SCRIPTED_PRICE }];
  if (config.openaiBaseUrl) {
    const model = config.openaiModel ?? 'gpt-4o-mini';
    list.push({
      id: model,
      provider: 'openai_compatible',
      model,
      baseUrl: config.openaiBaseUrl.replace(/\/+$/, ''),
      ...(config.openaiApiKey ? { apiKey: config.openaiApiKey } : {}),
    });
  }
  return list;
}

/** The model registry: MODELS_FILE when set (validated at start-up), else the default list. */
@Injectable()
export class FileModelCatalog extends ModelCatalog {
  private readonly entries: ModelEntry[];
  private readonly byId: Map<string, ModelEntry>;

  constructor(config: AppConfig) {
    super();
    if (config.modelsFile) {
      let raw: unknown;
      try {
        raw = JSON.parse(readFileSync(config.modelsFile, 'utf8'));
      } catch (err) {
        throw new Error(`MODELS_FILE=${JSON.stringify(config.modelsFile)}: must name a readable JSON array of models: ${(err as Error).message}`);
      }
      const { entries, problems } = parseModelEntries(raw, process.env);
      // A model key is the operator's: no tool header may name its variable (TOOL_ENV_SECRETS would send it to a tenant's server).
      for (const name of keyVariables(raw)) {
        if (config.toolEnvSecrets.listed(name)) problems.push(`\${env:${name}} is a model key and must not be listed in TOOL_ENV_SECRETS`);
      }
      if (problems.length) throw new Error(`MODELS_FILE=${JSON.stringify(config.modelsFile)}: ${problems.join('; ')}`);
      this.entries = entries;
    } else {
      this.entries = defaultModelEntries(config);
    }
    this.byId = new Map(this.entries.map((e) => [e.id, e]));
    new Logger('Models').debug(`models: ${this.entries.map((e) => `${e.id} (${e.provider})`).join(', ')}`);
  }

  list(): readonly ModelEntry[] {
    return this.entries;
  }

  get(id: string): ModelEntry | null {
    return this.byId.get(id) ?? null;
  }
}
