import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsDefined,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
  MinLength,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { IsObjectItems, IsStringMap } from '../../../../common/http/string-map.validator';
import { INT32_MAX } from '../../../../common/http/validation';

export class InputContentPartDto {
  @ApiProperty({ enum: ['text', 'attachment_ref'], example: 'text' })
  @IsIn(['text', 'attachment_ref'])
  type!: 'text' | 'attachment_ref';

  @ApiPropertyOptional({ example: 'Where is my order O-1001?', description: 'With type text.' })
  @ValidateIf((o: InputContentPartDto) => o.type === 'text')
  @IsString()
  @MinLength(1)
  @MaxLength(200_000)
  text?: string;

  @ApiPropertyOptional({ example: 'att_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B', description: 'With type attachment_ref: a ready attachment of yours.' })
  @ValidateIf((o: InputContentPartDto) => o.type === 'attachment_ref')
  @IsString()
  @MaxLength(64)
  attachment_id?: string;
}

export class RunInputDto {
  @ApiProperty({ enum: ['user'] })
  @IsIn(['user'])
  role!: 'user';

  @ApiProperty({ type: [InputContentPartDto] })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(100)
  @IsObjectItems()
  @ValidateNested({ each: true })
  @Type(() => InputContentPartDto)
  content!: InputContentPartDto[];
}

export class RunLimitsInputDto {
  @ApiPropertyOptional({ minimum: 1, maximum: 100, default: 10 })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100)
  max_steps?: number;

  @ApiPropertyOptional({ minimum: 1000, maximum: 3_600_000, default: 300_000 })
  @IsOptional()
  @IsInt()
  @Min(1000)
  @Max(3_600_000)
  timeout_ms?: number;

  @ApiPropertyOptional({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, nullable: true, default: null })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(Number.MAX_SAFE_INTEGER)
  max_total_tokens?: number;

  @ApiPropertyOptional({ minimum: 0, maximum: 1000, default: 50 })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(1000)
  max_tool_calls?: number;
}

export class CreateRunRequestDto {
  @ApiProperty({ type: RunInputDto, example: { role: 'user', content: [{ type: 'text', text: 'Where is my order O-1001?' }] } })
  @IsDefined({ message: 'input is required' })
  @IsObject()
  @ValidateNested()
  @Type(() => RunInputDto)
  input!: RunInputDto;

  @ApiPropertyOptional({ enum: ['stream', 'sync'], default: 'stream', description: 'sync: wait up to wait_timeout_ms for a terminal or waiting status.' })
  @IsOptional()
  @IsIn(['stream', 'sync'])
  mode?: 'stream' | 'sync';

  @ApiPropertyOptional({
    enum: ['reject', 'enqueue', 'steer', 'interrupt'],
    description:
      "When the session already has an active run: reject (409 session_busy), enqueue (FIFO), steer (the input goes to the active run's next model turn) or interrupt (cancel it, then run this). Omitted: the session's default_concurrency (default reject).",
    example: 'steer',
  })
  @IsOptional()
  @IsIn(['reject', 'enqueue', 'steer', 'interrupt'])
  concurrency?: 'reject' | 'enqueue' | 'steer' | 'interrupt';

  @ApiPropertyOptional({ description: "If given and not the session's current revision: 409 session_conflict.", minimum: 0, maximum: INT32_MAX })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(INT32_MAX)
  expected_revision?: number;

  @ApiPropertyOptional({ type: RunLimitsInputDto })
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => RunLimitsInputDto)
  limits?: RunLimitsInputDto;

  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string' }, example: { channel: 'swagger' }, description: 'At most 16 keys, values of at most 512 characters.' })
  @IsOptional()
  @IsStringMap(16, 512)
  metadata?: Record<string, string>;

  @ApiPropertyOptional({ minimum: 0, maximum: 120000, default: 60000 })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(120_000)
  wait_timeout_ms?: number;

  @ApiPropertyOptional({ example: 'scripted', description: "Overrides the session's model for this run only." })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  model?: string;
}
