import { Injectable } from '@nestjs/common';
import { AgentCatalog } from '../../domain/agent-definition';
import { ModelProvider, ModelRouter, unknownModel } from '../../domain/model-provider';
import { OpenAiModelProvider } from './openai-model-provider';
import { ScriptedModelProvider } from './scripted-model-provider';

export const SCRIPTED_MODEL = 'scripted';

/** `scripted` -> the offline model; any other known model name -> the OpenAI-compatible endpoint. */
@Injectable()
export class DefaultModelRouter extends ModelRouter {
  constructor(
    private readonly catalog: AgentCatalog,
    private readonly scripted: ScriptedModelProvider,
    private readonly openai: OpenAiModelProvider,
  ) {
    super();
  }

  forModel(model: string): ModelProvider {
    if (model === SCRIPTED_MODEL) return this.scripted;
    if (this.catalog.knownModels().includes(model)) return this.openai;
    throw unknownModel(model);
  }
}
