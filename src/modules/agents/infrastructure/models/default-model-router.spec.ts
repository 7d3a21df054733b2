import { loadConfig } from '../../../../common/config/app-config';
import { DomainError } from '../../../../common/errors/domain-error';
import { AgentCatalog, AgentDefinition } from '../../domain/agent-definition';
import { DefaultModelRouter } from './default-model-router';
import { OpenAiModelProvider } from './openai-model-provider';
import { ScriptedModelProvider } from './scripted-model-provider';

class Catalog extends AgentCatalog {
  constructor(private readonly models: string[]) {
    super();
  }
  list(): AgentDefinition[] {
    return [];
  }
  get(): AgentDefinition | null {
    return null;
  }
  knownModels(): string[] {
    return this.models;
  }
}

describe('DefaultModelRouter', () => {
  const scripted = new ScriptedModelProvider();
  const openai = new OpenAiModelProvider(loadConfig({ OPENAI_BASE_URL: 'http://127.0.0.1:1/v1' }));

  it.each<[string[], string, 'scripted' | 'openai' | 'unknown']>([
    [['scripted'], 'scripted', 'scripted'],
    [['scripted', 'gpt-4o-mini'], 'gpt-4o-mini', 'openai'],
    [['scripted'], 'gpt-4o-mini', 'unknown'],
    [['scripted', 'gpt-4o-mini'], 'gpt-5', 'unknown'],
    [['scripted'], '', 'unknown'],
  ])('known %j: %s -> %s', (models, model, expected) => {
    const router = new DefaultModelRouter(new Catalog(models), scripted, openai);
    if (expected === 'unknown') {
      expect(() => router.forModel(model)).toThrow(DomainError);
      expect(() => router.forModel(model)).toThrow(expect.objectContaining({ code: 'invalid_request' }));
    } else {
      expect(router.forModel(model)).toBe(expected === 'scripted' ? scripted : openai);
    }
  });
});
