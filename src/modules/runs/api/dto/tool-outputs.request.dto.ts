import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsObjectItems } from '../../../../common/http/string-map.validator';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsDefined, IsObject, IsString, MaxLength, ValidateIf, ValidateNested } from 'class-validator';
import { MayOmit } from '../../../../common/http/validation';
import { ANY_JSON } from '../../../../common/http/openapi';

export class ToolOutputErrorDto {
  @ApiPropertyOptional({ example: 'tool_failed' })
  @MayOmit()
  @IsString()
  @MaxLength(64)
  code?: string;

  @ApiProperty({ example: 'customer not found in CRM' })
  @IsString()
  @MaxLength(4000)
  message!: string;
}

export class ToolOutputDto {
  @ApiProperty({ example: 'call_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' })
  @IsString()
  @MaxLength(64)
  tool_call_id!: string;

  @ApiPropertyOptional({ type: ANY_JSON, description: 'The tool result (any JSON but null). Give either output or error.', example: { name: 'Ada Lovelace', tier: 'gold' } })
  @ValidateIf((o: ToolOutputDto) => o.error === undefined)
  @IsDefined({ message: 'output or error is required' })
  output?: unknown;

  @ApiPropertyOptional({ type: ToolOutputErrorDto })
  @MayOmit()
  @IsObject()
  @ValidateNested()
  @Type(() => ToolOutputErrorDto)
  error?: ToolOutputErrorDto;
}

export class SubmitToolOutputsRequestDto {
  @ApiProperty({ type: [ToolOutputDto] })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(100)
  @IsObjectItems()
  @ValidateNested({ each: true })
  @Type(() => ToolOutputDto)
  tool_outputs!: ToolOutputDto[];
}

/** `POST /v1/runs/{id}/callbacks/{tool_call_id}`: the tool's result (`output`) or its failure (`error`). */
export class ToolCallbackRequestDto {
  @ApiPropertyOptional({ type: ANY_JSON, description: "The tool's result (any JSON but null). Give either output or error.", example: { shipment_id: 'SHP-7', status: 'dispatched' } })
  @ValidateIf((o: ToolCallbackRequestDto) => o.error === undefined)
  @IsDefined({ message: 'output or error is required' })
  output?: unknown;

  @ApiPropertyOptional({ type: ToolOutputErrorDto, description: 'The tool failed: the call becomes `tool.failed` with this code (default `tool_failed`) and message.' })
  @MayOmit()
  @IsObject()
  @ValidateNested()
  @Type(() => ToolOutputErrorDto)
  error?: ToolOutputErrorDto;
}

export class ToolCallbackResponseDto {
  @ApiProperty({ enum: ['tool_callback'] }) object!: 'tool_callback';
  @ApiProperty({ example: 'run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) run_id!: string;
  @ApiProperty({ example: 'call_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) tool_call_id!: string;
  @ApiProperty({ example: 'running', description: "The run's status after the callback (`running`: it resumed)." }) run_status!: string;
}
