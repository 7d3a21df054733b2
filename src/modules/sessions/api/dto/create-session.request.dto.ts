import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsObject, IsOptional, IsString, Matches, MaxLength, ValidateIf, ValidateNested } from 'class-validator';
import { DefaultConcurrencyProperty } from './default-concurrency.property';
import { SessionTtlDto, SessionTtlProperty } from './session-ttl.dto';
import { IsStringMap } from '../../../../common/http/string-map.validator';
import { MayOmit } from '../../../../common/http/validation';

export class InlineAgentDto {
  @ApiPropertyOptional({ example: 'scripted', description: 'Default `scripted`.' })
  @MayOmit()
  @IsString()
  @MaxLength(200)
  model?: string;

  @ApiPropertyOptional({ maxLength: 20000, example: 'Answer in one sentence.' })
  @MayOmit()
  @IsString()
  @MaxLength(20000)
  instructions?: string;

  @ApiPropertyOptional({
    description: 'Built-in tool names and `{"type":"function","name","description","parameters"}` tools (executed by the client).',
    type: 'array',
    items: { oneOf: [{ type: 'string' }, { type: 'object', additionalProperties: true }] },
    example: ['get_time', { type: 'function', name: 'confirm', description: 'Asks the user to confirm.', parameters: { type: 'object', properties: { question: { type: 'string' } } } }],
  })
  @MayOmit()
  @IsArray()
  @ArrayMaxSize(128)
  tools?: unknown[];

  @ApiPropertyOptional({ type: [String], maxItems: 32, example: ['billing_agent'], description: 'Agents of this tenant the inline agent may hand the run to (CONTRACT 16): tools `transfer_to_<agent_id>`; an unknown id: 400.' })
  @MayOmit()
  @IsArray()
  @ArrayMaxSize(32)
  @IsString({ each: true })
  handoffs?: string[];

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    example: { enabled: true, max_concurrent: 3 },
    description: 'Subagents of the inline agent (CONTRACT 16): `{enabled, agents?, max_concurrent?}` as on `POST /v1/agents`.',
  })
  @MayOmit()
  @IsObject()
  subagents?: Record<string, unknown>;
}

export class CreateSessionRequestDto {
  @ApiPropertyOptional({
    type: InlineAgentDto,
    description: 'An inline agent configuration instead of `agent_id` (CONTRACT section 13): the session pins it (as a hidden agent `inline_...`, version "1").',
  })
  @MayOmit()
  @IsObject()
  @ValidateNested()
  @Type(() => InlineAgentDto)
  agent?: InlineAgentDto;

  @ApiPropertyOptional({ example: 'support_agent', description: 'Defaults to AGENT_DEFAULT_ID (support_agent). See GET /v1/agents.' })
  @MayOmit()
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
  @MayOmit()
  @IsStringMap(16, 512)
  metadata?: Record<string, string>;

  @DefaultConcurrencyProperty()
  default_concurrency?: 'reject' | 'enqueue' | 'steer' | 'interrupt';

  @SessionTtlProperty()
  ttl?: SessionTtlDto | null;
}
