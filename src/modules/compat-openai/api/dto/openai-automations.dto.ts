import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsObject, IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import { OpenAiListQueryDto } from './openai.dto';

/** `client.beta.agents.automations.create` (`CreateAutomationParamsPeriodic` | `CreateAutomationParamsOnce`). */
export class OpenAiAutomationCreateDto {
  @ApiProperty({ enum: ['periodic', 'once'] })
  @IsIn(['periodic', 'once'])
  type!: 'periodic' | 'once';

  @ApiProperty({ example: 'Morning digest' })
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name!: string;

  @ApiPropertyOptional({ example: '0 9 * * 1-5', description: 'periodic: a standard five-field cron expression.' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  expression?: string;

  @ApiPropertyOptional({ example: 'Europe/Berlin', description: 'periodic: the IANA time zone of the expression.' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  timezone?: string;

  @ApiPropertyOptional({ example: 1798102800, description: 'once: a future Unix time in seconds.' })
  @IsOptional()
  @IsInt()
  run_at?: number;

  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description: '`{"type":"new_session","agent_id","environment":{"type":"none"},"input":[user messages],"metadata"?}` or `{"type":"existing_session","session_id","instructions"}`.',
  })
  @IsObject()
  target!: Record<string, unknown>;

  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string' } })
  @IsOptional()
  @IsObject()
  metadata?: Record<string, string>;
}

/** `client.beta.agents.automations.update`: only the fields given change. */
export class OpenAiAutomationUpdateDto {
  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name?: string;

  @ApiPropertyOptional({ description: 'periodic only.' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  expression?: string;

  @ApiPropertyOptional({ description: 'periodic only.' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  timezone?: string;

  @ApiPropertyOptional({ description: 'once only: a future Unix time in seconds, before the occurrence fired.' })
  @IsOptional()
  @IsInt()
  run_at?: number;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'Replaces the whole target (same type).' })
  @IsOptional()
  @IsObject()
  target?: Record<string, unknown>;

  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string' }, description: 'Replaces all metadata.' })
  @IsOptional()
  @IsObject()
  metadata?: Record<string, string>;
}

export class OpenAiAutomationListQueryDto extends OpenAiListQueryDto {
  @ApiPropertyOptional({ description: 'Only automations whose target is this existing session (agent-created ones included).' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  session_id?: string;
}
