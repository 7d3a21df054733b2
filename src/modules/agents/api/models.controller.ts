import { Controller, Get } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../../../common/errors/error.dto';
import { ListModelsQuery, ModelView } from '../application/queries/model-queries';
import { ModelListResponseDto, toModelResponse } from './dto/model.response.dto';

@ApiTags('Models')
@ApiBearerAuth('api-key')
@Controller('v1/models')
export class ModelsController {
  constructor(private readonly queries: QueryBus) {}

  @Get()
  @ApiOperation({
    summary: 'List the models agents and runs can name',
    description:
      'The operator\'s model registry (MODELS_FILE, or the default list: the offline `scripted` model, plus the OPENAI_BASE_URL model when set), in ' +
      'registry order. Agents (`model`) and runs (the `model` override) name an `id`; any other value is 400 `invalid_request`. Prices are USD per ' +
      'million tokens as decimal strings; a run\'s `usage.estimated_cost` is computed from them. Keys and endpoints are never shown.',
  })
  @ApiOkResponse({
    type: ModelListResponseDto,
    examples: {
      registry: {
        summary: 'Scripted, OpenAI and Anthropic models',
        value: {
          object: 'list',
          data: [
            { id: 'scripted', object: 'model', provider: 'scripted', model: 'scripted', context_window: null, max_output_tokens: 4096, price: { input_per_mtok: '1', output_per_mtok: '2', cached_input_per_mtok: '0.5', currency: 'USD' } },
            { id: 'gpt-4o-mini', object: 'model', provider: 'openai', model: 'gpt-4o-mini', context_window: 128000, max_output_tokens: 16384, price: { input_per_mtok: '0.15', output_per_mtok: '0.6', cached_input_per_mtok: '0.075', currency: 'USD' } },
            { id: 'claude-sonnet', object: 'model', provider: 'anthropic', model: 'claude-sonnet-4-5', context_window: 200000, max_output_tokens: 8192, price: { input_per_mtok: '3', output_per_mtok: '15', cached_input_per_mtok: '0.3', currency: 'USD' } },
          ],
        },
      },
    },
  })
  @ApiErrors()
  async list(): Promise<ModelListResponseDto> {
    const models = await this.queries.execute<ListModelsQuery, ModelView[]>(new ListModelsQuery());
    return { object: 'list', data: models.map(toModelResponse) };
  }
}
