import { ApiProperty } from '@nestjs/swagger';
import { ModelView } from '../../application/queries/model-queries';
import { maxOutputTokensOf, MODEL_PROVIDERS, ModelProviderKind } from '../../domain/model-catalog';

export class ModelPriceDto {
  @ApiProperty({ example: '3', description: 'USD per million input tokens (decimal string).' }) input_per_mtok!: string;
  @ApiProperty({ example: '15', description: 'USD per million output tokens, reasoning included (decimal string).' }) output_per_mtok!: string;
  @ApiProperty({ type: String, nullable: true, example: '0.3', description: 'USD per million cached input tokens; null: cached input costs the input price.' })
  cached_input_per_mtok!: string | null;
  @ApiProperty({ enum: ['USD'], example: 'USD' }) currency!: 'USD';
}

export class ModelResponseDto {
  @ApiProperty({ example: 'claude-sonnet', description: 'What agents (`model`) and runs (`model` override) name.' }) id!: string;
  @ApiProperty({ enum: ['model'], example: 'model' }) object!: 'model';
  @ApiProperty({ enum: MODEL_PROVIDERS, example: 'anthropic' }) provider!: ModelProviderKind;
  @ApiProperty({ example: 'claude-sonnet-4-5', description: "The provider's own model name." }) model!: string;
  @ApiProperty({ type: Number, nullable: true, example: 200000 }) context_window!: number | null;
  @ApiProperty({ example: 4096, description: "The most output one call may produce: what limits.max_cost prices a call's output at (the entry's max_output_tokens, else 4096)." })
  max_output_tokens!: number;
  @ApiProperty({ type: ModelPriceDto, nullable: true, description: 'null: unpriced (its calls cost "0").' }) price!: ModelPriceDto | null;
}

export class ModelListResponseDto {
  @ApiProperty({ enum: ['list'], example: 'list' }) object!: 'list';
  @ApiProperty({ type: [ModelResponseDto] }) data!: ModelResponseDto[];
}

export function toModelResponse(m: ModelView): ModelResponseDto {
  return {
    id: m.id,
    object: 'model',
    provider: m.provider,
    model: m.model,
    context_window: m.contextWindow ?? null,
    max_output_tokens: maxOutputTokensOf(m),
    price: m.price
      ? { input_per_mtok: m.price.input_per_mtok, output_per_mtok: m.price.output_per_mtok, cached_input_per_mtok: m.price.cached_input_per_mtok ?? null, currency: 'USD' }
      : null,
  };
}
