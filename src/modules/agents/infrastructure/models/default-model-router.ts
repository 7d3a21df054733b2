import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../../../common/config/app-config';
import { ModelCatalog } from '../../domain/model-catalog';
import { ModelProvider, ModelRouter, unknownModel } from '../../domain/model-provider';
import { AiSdkModelProvider } from './ai-sdk-model-provider';
import { ScriptedModelProvider } from './scripted-model-provider';

export { SCRIPTED_MODEL } from './model-registry';

/** A registry model id -> its provider: the offline scripted model, or the AI SDK provider of its entry (built once). */
@Injectable()
export class DefaultModelRouter extends ModelRouter {
  private readonly providers = new Map<string, ModelProvider>();

  constructor(
    private readonly catalog: ModelCatalog,
    private readonly scripted: ScriptedModelProvider,
    private readonly config: AppConfig,
  ) {
    super();
  }

  forModel(model: string): ModelProvider {
    const entry = this.catalog.get(model);
    if (!entry) throw unknownModel(model);
    if (entry.provider === 'scripted') return this.scripted;
    let p = this.providers.get(entry.id);
    if (!p) {
      p = new AiSdkModelProvider(entry, { maxRetries: this.config.modelMaxRetries, baseDelayMs: this.config.modelRetryBaseMs });
      this.providers.set(entry.id, p);
    }
    return p;
  }
}
