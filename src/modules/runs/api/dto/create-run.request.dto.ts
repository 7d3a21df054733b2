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
  ValidateBy,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { compareAmounts, isAmount } from '../../../usage/domain/money';
import { IsObjectItems, IsStringMap } from '../../../../common/http/string-map.validator';
import { INT32_MAX, MayOmit } from '../../../../common/http/validation';

export class InputContentPartDto {
  @ApiProperty({ enum: ['text', 'attachment_ref'], example: 'text' })
  @IsIn(['text', 'attachment_ref'])
  type!: 'text' | 'attachment_ref';

  @ApiPropertyOptional({ example: 'Where is my order O-1001?', description: 'With type text.' })
  // Checked whenever given, not only with its type: a stray `attachment_id: true` on a text part was ignored.
  @ValidateIf((o: InputContentPartDto, v: unknown) => o.type === 'text' || v !== undefined)
  @IsString()
  @MinLength(1)
  @MaxLength(200_000)
  text?: string;

  @ApiPropertyOptional({ example: 'att_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B', description: 'With type attachment_ref: a ready attachment of yours.' })
  @ValidateIf((o: InputContentPartDto, v: unknown) => o.type === 'attachment_ref' || v !== undefined)
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

/** A positive USD amount as a decimal string (at most 12 digits each side of the point): money is never a binary float. */
function IsPositiveAmount(): PropertyDecorator {
  return ValidateBy({
    name: 'isPositiveAmount',
    validator: {
      validate: (v: unknown) => isAmount(v) && compareAmounts(v, '0') > 0,
      defaultMessage: () => '$property must be a positive decimal string (USD), e.g. "0.50"',
    },
  });
}

export class RunLimitsInputDto {
  @ApiPropertyOptional({ minimum: 1, maximum: 100, default: 10 })
  @MayOmit()
  @IsInt()
  @Min(1)
  @Max(100)
  max_steps?: number;

  @ApiPropertyOptional({ minimum: 1000, maximum: 3_600_000, default: 300_000 })
  @MayOmit()
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
  @MayOmit()
  @IsInt()
  @Min(0)
  @Max(1000)
  max_tool_calls?: number;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    default: null,
    example: '0.50',
    pattern: '^\\d{1,12}(\\.\\d{1,12})?$',
    description:
      'Cost budget in USD (a positive decimal string). Before each model call, the estimated cost of that call (its input tokens, the context\'s characters / 4, at the ' +
      "model's input price + the model's max_output_tokens at its output price) plus the run's usage.estimated_cost so far is compared with it; " +
      'if it would exceed it, the call is not made and the run is terminated with termination_reason cost_budget. Null: no budget.',
  })
  @IsOptional()
  @IsPositiveAmount()
  max_cost?: string | null;

  @ApiPropertyOptional({
    minimum: 0,
    maximum: 10,
    default: 3,
    description:
      'How many levels of subagents may be below this run (0: it may start none). Each subagent run gets one less than its parent; ' +
      'create_subagent / send_subagent_input in a run at 0 returns the tool error subagent_limit to the model (the run goes on).',
  })
  @MayOmit()
  @IsInt()
  @Min(0)
  @Max(10)
  max_subagent_depth?: number;

  @ApiPropertyOptional({
    minimum: 0,
    maximum: 1000,
    default: 20,
    description:
      "How many subagent runs this run's whole tree may start (create_subagent and send_subagent_input, at every depth below it). " +
      'A start past it returns the tool error subagent_limit to the model (the run goes on).',
  })
  @MayOmit()
  @IsInt()
  @Min(0)
  @Max(1000)
  max_subagents_per_run?: number;
}

export class CreateRunRequestDto {
  @ApiProperty({ type: RunInputDto, example: { role: 'user', content: [{ type: 'text', text: 'Where is my order O-1001?' }] } })
  @IsDefined({ message: 'input is required' })
  @IsObject()
  @ValidateNested()
  @Type(() => RunInputDto)
  input!: RunInputDto;

  @ApiPropertyOptional({ enum: ['stream', 'sync'], default: 'stream', description: 'sync: wait up to wait_timeout_ms for a terminal or waiting status.' })
  @MayOmit()
  @IsIn(['stream', 'sync'])
  mode?: 'stream' | 'sync';

  @ApiPropertyOptional({
    enum: ['reject', 'enqueue', 'steer', 'interrupt'],
    description:
      "When the session already has an active run: reject (409 session_busy), enqueue (FIFO), steer (the input goes to the active run's next model turn) or interrupt (cancel it, then run this). Omitted: the session's default_concurrency (default steer).",
    example: 'steer',
  })
  @MayOmit()
  @IsIn(['reject', 'enqueue', 'steer', 'interrupt'])
  concurrency?: 'reject' | 'enqueue' | 'steer' | 'interrupt';

  @ApiPropertyOptional({ description: "If given and not the session's current revision: 409 session_conflict.", minimum: 0, maximum: INT32_MAX })
  @MayOmit()
  @IsInt()
  @Min(0)
  @Max(INT32_MAX)
  expected_revision?: number;

  @ApiPropertyOptional({ type: RunLimitsInputDto })
  @MayOmit()
  @IsObject()
  @ValidateNested()
  @Type(() => RunLimitsInputDto)
  limits?: RunLimitsInputDto;

  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string' }, example: { channel: 'swagger' }, description: 'At most 16 keys, values of at most 512 characters.' })
  @MayOmit()
  @IsStringMap(16, 512)
  metadata?: Record<string, string>;

  @ApiPropertyOptional({ minimum: 0, maximum: 120000, default: 60000 })
  @MayOmit()
  @IsInt()
  @Min(0)
  @Max(120_000)
  wait_timeout_ms?: number;

  @ApiPropertyOptional({ example: 'scripted', description: "Overrides the session's model for this run only." })
  @MayOmit()
  @IsString()
  @MaxLength(128)
  model?: string;
}
