import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsObject, IsOptional, IsString, Max, MaxLength, Min, ValidateIf, ValidateNested } from 'class-validator';
import { INT32_MAX, MayOmit } from '../../../../common/http/validation';
import { DefaultConcurrencyProperty } from './default-concurrency.property';
import { SessionTtlDto, SessionTtlProperty } from './session-ttl.dto';
import { IsStringMap } from '../../../../common/http/string-map.validator';

export class SessionAgentPatchDto {
  @ApiPropertyOptional({ example: 'scripted', description: 'Model for runs accepted from now on; unknown models are 400.' })
  @IsString()
  @MaxLength(128)
  model!: string;
}

export class UpdateSessionRequestDto {
  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 200, example: 'Renamed' })
  @ValidateIf((_, v) => v !== null)
  @IsOptional()
  @IsString()
  @MaxLength(200)
  title?: string | null;

  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string' }, example: { channel: 'swagger' }, description: 'Replaces the whole metadata object (at most 16 keys, values of at most 512 characters).' })
  @MayOmit()
  @IsStringMap(16, 512)
  metadata?: Record<string, string>;

  @ApiPropertyOptional({ type: SessionAgentPatchDto })
  @MayOmit()
  @IsObject()
  @ValidateNested()
  @Type(() => SessionAgentPatchDto)
  agent?: SessionAgentPatchDto;

  @ApiPropertyOptional({ example: 1, minimum: 0, maximum: INT32_MAX, description: 'If given and not the current revision: 409 session_conflict with details.current_revision.' })
  @MayOmit()
  @IsInt()
  @Min(0)
  @Max(INT32_MAX)
  expected_revision?: number;

  @DefaultConcurrencyProperty()
  default_concurrency?: 'reject' | 'enqueue' | 'steer' | 'interrupt';

  @SessionTtlProperty(true)
  ttl?: SessionTtlDto | null;
}

export class ArchiveSessionRequestDto {
  @ApiPropertyOptional({ example: 2, minimum: 0, maximum: INT32_MAX })
  @MayOmit()
  @IsInt()
  @Min(0)
  @Max(INT32_MAX)
  expected_revision?: number;
}
