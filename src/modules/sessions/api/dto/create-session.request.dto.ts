import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Matches, MaxLength, ValidateIf } from 'class-validator';
import { DefaultConcurrencyProperty } from './default-concurrency.property';
import { IsStringMap } from '../../../../common/http/string-map.validator';

export class CreateSessionRequestDto {
  @ApiPropertyOptional({ example: 'support_agent', description: 'Defaults to AGENT_DEFAULT_ID (support_agent). See GET /v1/agents.' })
  @IsOptional()
  @IsString()
  @Matches(/^[a-z0-9_-]{1,64}$/, { message: 'agent_id must be an agent id such as support_agent' })
  agent_id?: string;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 200, example: 'Order O-1001' })
  @ValidateIf((_, v) => v !== null)
  @IsOptional()
  @IsString()
  @MaxLength(200)
  title?: string | null;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string' },
    description: 'At most 16 string keys, values <= 512 chars. Never given to the model.',
    example: { customer: 'acme' },
  })
  @IsOptional()
  @IsStringMap(16, 512)
  metadata?: Record<string, string>;

  @DefaultConcurrencyProperty()
  default_concurrency?: 'reject' | 'enqueue' | 'steer' | 'interrupt';
}
