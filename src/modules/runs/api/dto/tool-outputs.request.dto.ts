import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsObjectItems } from '../../../../common/http/string-map.validator';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsDefined, IsObject, IsOptional, IsString, MaxLength, ValidateIf, ValidateNested } from 'class-validator';

export class ToolOutputErrorDto {
  @ApiPropertyOptional({ example: 'tool_failed' })
  @IsOptional()
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

  @ApiPropertyOptional({ description: 'The tool result (any JSON). Give either output or error.', example: { name: 'Ada Lovelace', tier: 'gold' } })
  @ValidateIf((o: ToolOutputDto) => o.error === undefined)
  @IsDefined({ message: 'output or error is required' })
  output?: unknown;

  @ApiPropertyOptional({ type: ToolOutputErrorDto })
  @IsOptional()
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
