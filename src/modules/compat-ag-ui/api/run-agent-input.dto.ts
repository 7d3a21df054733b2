import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Allow, ArrayMaxSize, IsArray, IsIn, IsObject, IsOptional, IsString, MaxLength, MinLength, ValidateNested } from 'class-validator';
import { Type } from 'class-transformer';
import { ANY_JSON } from '../../../common/http/openapi';
import { IsObjectItems } from '../../../common/http/string-map.validator';

export class AgUiToolDto {
  @ApiProperty({ example: 'confirm_address', description: 'A client (frontend) tool of this run: the model may call it; the run then waits for its `tool` message.' })
  @IsString()
  @MinLength(1)
  @MaxLength(64)
  name!: string;

  @ApiPropertyOptional({ nullable: true, example: 'Asks the user to confirm the delivery address.' })
  @IsOptional()
  @IsString()
  @MaxLength(4000)
  description?: string;

  @ApiPropertyOptional({ nullable: true, description: 'JSON Schema of the arguments.', example: { type: 'object', properties: { address: { type: 'string' } } } })
  @IsOptional()
  @IsObject()
  parameters?: Record<string, unknown>;

  @ApiPropertyOptional({ nullable: true, description: 'Ignored.' })
  @IsOptional()
  @IsObject()
  metadata?: Record<string, unknown>;
}

export class AgUiResumeEntryDto {
  @ApiProperty({ example: 'apr_01JD2Z4Q8M3K7P6W9X0Y1Z2A3G', description: 'The interrupt answered: an approval id (`Interrupt.id` of the `interrupt` outcome).' })
  @IsString()
  @MaxLength(64)
  interruptId!: string;

  @ApiProperty({ enum: ['resolved', 'cancelled'], description: '`cancelled` rejects the approval.' })
  @IsIn(['resolved', 'cancelled'])
  status!: 'resolved' | 'cancelled';

  @ApiPropertyOptional({ type: ANY_JSON, description: '`{"decision": "approve" | "reject", "reason"?: string}`', example: { decision: 'approve' } })
  @IsOptional()
  @Allow()
  payload?: unknown;

  @ApiPropertyOptional({ nullable: true, description: 'Ignored.' })
  @IsOptional()
  @IsObject()
  metadata?: Record<string, unknown>;
}

/**
 * AG-UI 1.0 `RunAgentInput` (`@ag-ui/core`). Messages are read loosely (their many optional
 * fields are the client's business): the newest `user` message is the input, trailing `tool`
 * messages answer pending client tool calls; `state`, `context` and `forwardedProps` are accepted
 * and ignored (the server keeps the history).
 */
export class RunAgentInputDto {
  @ApiProperty({ example: 'support-thread-1', description: "One of the caller's session ids, or any other string: the name of a session of this caller created on first use." })
  @IsString()
  @MinLength(1)
  @MaxLength(1000)
  threadId!: string;

  @ApiProperty({ example: '5f0c1c9e-6a51-4c1f-9d55-2f1d3d1c9a10', description: 'Doubles as the idempotency key: the same runId again streams the same run from its start.' })
  @IsString()
  @MinLength(1)
  @MaxLength(255)
  runId!: string;

  @ApiPropertyOptional({ nullable: true, example: '1.0' })
  @IsOptional()
  @IsString()
  @MaxLength(32)
  protocolVersion?: string;

  @ApiPropertyOptional({ nullable: true, description: 'Ignored.' })
  @IsOptional()
  @IsString()
  @MaxLength(255)
  parentRunId?: string;

  @ApiPropertyOptional({ type: ANY_JSON, description: 'Ignored (any JSON).' })
  @IsOptional()
  @Allow()
  state?: unknown;

  @ApiProperty({
    type: 'array',
    items: { type: 'object', additionalProperties: true },
    example: [{ id: 'm1', role: 'user', content: 'Where is my order O-1001?' }],
    description: 'The conversation as the client has it. Only the newest `user` message (the input) or the trailing `tool` messages (outputs of pending client tool calls) are read.',
  })
  @IsArray()
  @ArrayMaxSize(10_000)
  @IsObject({ each: true })
  messages!: Array<Record<string, unknown>>;

  @ApiPropertyOptional({ nullable: true, type: [AgUiToolDto] })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(64)
  @IsObjectItems()
  @ValidateNested({ each: true })
  @Type(() => AgUiToolDto)
  tools?: AgUiToolDto[];

  @ApiPropertyOptional({ nullable: true, type: 'array', items: { type: 'object', additionalProperties: true }, description: 'Ignored.' })
  @IsOptional()
  @IsArray()
  context?: unknown[];

  @ApiPropertyOptional({ type: ANY_JSON, description: 'Ignored (any JSON).' })
  @IsOptional()
  @Allow()
  forwardedProps?: unknown;

  @ApiPropertyOptional({ nullable: true, type: [AgUiResumeEntryDto], description: 'Answers to the approvals of the `interrupt` outcome that ended the previous run of this thread.' })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(64)
  @IsObjectItems()
  @ValidateNested({ each: true })
  @Type(() => AgUiResumeEntryDto)
  resume?: AgUiResumeEntryDto[];
}
