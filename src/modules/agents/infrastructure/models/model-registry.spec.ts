import { loadConfig } from '../../../../common/config/app-config';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultModelEntries, FileModelCatalog, parseModelEntries, SCRIPTED_PRICE } from './model-registry';

describe('parseModelEntries (MODELS_FILE)', () => {
  const env = { OPENAI_KEY: 'sk-1', EMPTY: '' };

  it('accepts every provider, resolves ${env:NAME} keys and keeps prices as written', () => {
    const { entries, problems } = parseModelEntries(
      [
        { id: 'gpt', provider: 'openai', model: 'gpt-4o-mini', api_key: '${env:OPENAI_KEY}', price: { input_per_mtok: 0.15, output_per_mtok: 0.6, cached_input_per_mtok: 0.075 } },
        { id: 'local', provider: 'openai_compatible', model: 'llama3.1', base_url: 'http://127.0.0.1:11434/v1/', context_window: 8192, max_output_tokens: 2048 },
        { id: 'tiny', provider: 'scripted', model: 'scripted', price: { input_per_mtok: 1e-7, output_per_mtok: 0 } },
      ],
      env,
    );
    expect(problems).toEqual([]);
    expect(entries[0]).toEqual({ id: 'gpt', provider: 'openai', model: 'gpt-4o-mini', apiKey: 'sk-1', price: { input_per_mtok: '0.15', output_per_mtok: '0.6', cached_input_per_mtok: '0.075' } });
    expect(entries[1]).toEqual({ id: 'local', provider: 'openai_compatible', model: 'llama3.1', baseUrl: 'http://127.0.0.1:11434/v1', contextWindow: 8192, maxOutputTokens: 2048 });
    expect(entries[2].price).toEqual({ input_per_mtok: '0.0000001', output_per_mtok: '0' });
  });

  it('lists every problem, naming the entry and field', () => {
    const { problems } = parseModelEntries(
      [
        { id: 'a', provider: 'azure', model: 'x' },
        { id: 'a', provider: 'openai', model: '', api_key: 'sk-plain', extra: 1 },
        { id: 'b', provider: 'openai_compatible', model: 'm' },
        { id: 'c', provider: 'anthropic', model: 'm', api_key: '${env:MISSING}', base_url: 'ftp://x' },
        { id: 'd', provider: 'google', model: 'm', price: { input_per_mtok: '1', output_per_mtok: -1, per_call: 1 }, context_window: 0, max_output_tokens: 1.5 },
        'nope',
      ],
      env,
    );
    expect(problems).toEqual([
      '[0].provider must be one of: openai, openai_responses, anthropic, google, bedrock, openai_compatible, scripted',
      '[1] has unknown keys: extra',
      '[1].id "a" is listed twice',
      "[1].model must be a non-empty string (the provider's model name)",
      '[1].api_key must be "${env:NAME}" (keys are never written in the file)',
      '[2].base_url is required for provider openai_compatible',
      '[3].base_url must be an http(s) URL',
      '[3].api_key names ${env:MISSING}, which is not set',
      '[4].context_window must be a positive integer',
      '[4].max_output_tokens must be a positive integer',
      '[4].price has unknown keys: per_call',
      '[4].price.input_per_mtok must be a number 0..1000000 (USD per million tokens)',
      '[4].price.output_per_mtok must be a number 0..1000000 (USD per million tokens)',
      '[5] must be an object',
    ]);
  });

  it.each([[{}], [[]], ['x']])('rejects a file that is not a non-empty array: %j', (raw) => {
    expect(parseModelEntries(raw, env).problems.length).toBe(1);
  });
});

describe('defaultModelEntries', () => {
  it('is the priced scripted model alone without OPENAI_BASE_URL', () => {
    expect(defaultModelEntries(loadConfig({}))).toEqual([{ id: 'scripted', provider: 'scripted', model: 'scripted', price: SCRIPTED_PRICE }]);
  });

  it('maps OPENAI_BASE_URL / OPENAI_MODEL / OPENAI_API_KEY to an OpenAI-compatible entry', () => {
    const list = defaultModelEntries(loadConfig({ OPENAI_BASE_URL: 'http://127.0.0.1:8000/v1/', OPENAI_MODEL: 'qwen', OPENAI_API_KEY: 'k' }));
    expect(list[1]).toEqual({ id: 'qwen', provider: 'openai_compatible', model: 'qwen', baseUrl: 'http://127.0.0.1:8000/v1', apiKey: 'k' });
  });
});

describe('FileModelCatalog (start-up)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'models-spec-'));
    process.env.I27_SPEC_MODEL_KEY = 'sk-spec';
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
    delete process.env.I27_SPEC_MODEL_KEY;
  });
  const file = (content: string) => {
    const f = join(dir, `m${Math.random()}.json`);
    writeFileSync(f, content);
    return f;
  };
  const entry = { id: 'gpt', provider: 'openai', model: 'gpt-4o-mini', api_key: '${env:I27_SPEC_MODEL_KEY}' };

  it('loads a valid file, keys resolved from the environment', () => {
    const c = new FileModelCatalog(loadConfig({ MODELS_FILE: file(JSON.stringify([entry])) }));
    expect(c.get('gpt')).toMatchObject({ apiKey: 'sk-spec' });
    expect(c.get('scripted')).toBeNull();
  });

  it('stops on a file that is not JSON, and lists every problem of a bad one', () => {
    expect(() => new FileModelCatalog(loadConfig({ MODELS_FILE: file('[{') }))).toThrow(/^MODELS_FILE=".*json": must name a readable JSON array of models: /);
    expect(() => new FileModelCatalog(loadConfig({ MODELS_FILE: file(JSON.stringify([{ id: 'a', provider: 'x', model: 'm' }, { id: 'b' }])) }))).toThrow(
      /\[0\]\.provider must be one of.*; \[1\]\.provider must be one of.*; \[1\]\.model must be/,
    );
  });

  it('refuses a model key that TOOL_ENV_SECRETS would hand to tools', () => {
    expect(() => new FileModelCatalog(loadConfig({ MODELS_FILE: file(JSON.stringify([entry])), TOOL_ENV_SECRETS: 'I27_SPEC_MODEL_KEY' }))).toThrow(
      '${env:I27_SPEC_MODEL_KEY} is a model key and must not be listed in TOOL_ENV_SECRETS',
    );
  });
});
