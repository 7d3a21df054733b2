import { loadConfig } from '../../../../common/config/app-config';
import { DomainError } from '../../../../common/errors/domain-error';
import { ModelCatalog, ModelEntry } from '../../domain/model-catalog';
import { AiSdkModelProvider } from './ai-sdk-model-provider';
import { DefaultModelRouter } from './default-model-router';
import { ScriptedModelProvider } from './scripted-model-provider';

class Catalog extends ModelCatalog {
  constructor(private readonly entries: ModelEntry[]) {
    super();
  }
  list(): readonly ModelEntry[] {
    return this.entries;
  }
  get(id: string): ModelEntry | null {
    return this.entries.find((e) => e.id === id) ?? null;
  }
}

const SCRIPTED: ModelEntry = { id: 'scripted', provider: 'scripted', model: 'scripted' };
const COMPAT: ModelEntry = { id: 'local', provider: 'openai_compatible', model: 'llama3', baseUrl: 'http://127.0.0.1:1/v1' };
const CLAUDE: ModelEntry = { id: 'claude', provider: 'anthropic', model: 'claude-sonnet-4-5', apiKey: 'k' };

describe('DefaultModelRouter', () => {
  const scripted = new ScriptedModelProvider();
  const config = loadConfig({});

  it.each<[ModelEntry[], string, 'scripted' | 'sdk' | 'unknown']>([
    [[SCRIPTED], 'scripted', 'scripted'],
    [[SCRIPTED, COMPAT], 'local', 'sdk'],
    [[SCRIPTED, CLAUDE], 'claude', 'sdk'],
    [[SCRIPTED], 'local', 'unknown'],
    [[SCRIPTED, COMPAT], 'llama3', 'unknown'], // the provider's model name is not an id
    [[SCRIPTED], '', 'unknown'],
  ])('registry %#: %s -> %s', (entries, model, expected) => {
    const router = new DefaultModelRouter(new Catalog(entries), scripted, config);
    if (expected === 'unknown') {
      expect(() => router.forModel(model)).toThrow(DomainError);
      expect(() => router.forModel(model)).toThrow(expect.objectContaining({ code: 'invalid_request' }));
    } else if (expected === 'scripted') {
      expect(router.forModel(model)).toBe(scripted);
    } else {
      const p = router.forModel(model);
      expect(p).toBeInstanceOf(AiSdkModelProvider);
      expect(router.forModel(model)).toBe(p); // built once
    }
  });
});
