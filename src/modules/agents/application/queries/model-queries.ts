import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { ModelCatalog, ModelEntry } from '../../domain/model-catalog';

/** The model registry as tenants see it: ids, providers and prices, never keys or endpoints. */
export class ListModelsQuery {}

export type ModelView = Pick<ModelEntry, 'id' | 'provider' | 'model' | 'contextWindow' | 'maxOutputTokens' | 'price'>;

@QueryHandler(ListModelsQuery)
export class ListModelsHandler implements IQueryHandler<ListModelsQuery> {
  constructor(private readonly catalog: ModelCatalog) {}

  async execute(): Promise<ModelView[]> {
    return this.catalog.list().map((m) => ({ id: m.id, provider: m.provider, model: m.model, contextWindow: m.contextWindow, maxOutputTokens: m.maxOutputTokens, price: m.price }));
  }
}
