import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { toDecimalInt } from '../../../../common/http/pagination';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { RUN_EVENT_TYPES, RunEventType } from '../../domain/run-event';

export class RunEventResponseDto {
  @ApiProperty({ example: 'evt_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) event_id!: string;
  @ApiProperty({ example: 'run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3C' }) run_id!: string;
  @ApiProperty({ example: 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3D' }) session_id!: string;
  @ApiProperty({ description: 'Per run, from 1, gap-free. The SSE `id` of run streams.', example: 42 }) sequence!: number;
  @ApiProperty({ description: 'Per session across its runs, from 1, gap-free. The SSE `id` of session streams.', example: 311 })
  session_sequence!: number;
  @ApiProperty({ enum: RUN_EVENT_TYPES, example: 'message.delta' }) type!: RunEventType;
  @ApiProperty({ example: '2025-01-02T03:04:05.678Z' }) occurred_at!: string;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description:
      'Type-specific payload (CONTRACT section 8). Members see the public projection: arguments/results of private tools are `{"redacted":true}`, secret-looking keys are `"***"`.',
    example: { message_id: 'msg_01JD2Z4Q8M3K7P6W9X0Y1Z2A3E', content_index: 0, delta: 'Hello' },
  })
  data!: Record<string, unknown>;
}

export class RunEventListResponseDto {
  @ApiProperty({ enum: ['list'], example: 'list' }) object!: 'list';
  @ApiProperty({ type: [RunEventResponseDto] }) data!: RunEventResponseDto[];
  @ApiProperty({ description: 'True when more events follow the last one of this page.', example: false }) has_more!: boolean;
  @ApiProperty({
    description: 'The last sequence assigned in this stream so far (run: `sequence`, session: `session_sequence`); 0 when none.',
    example: 42,
  })
  last_sequence!: number;
}

export class EventsQueryDto {
  @ApiPropertyOptional({
    description:
      'Cursor: only events with a sequence (session streams: session_sequence) greater than this. Non-negative integer; default 0. ' +
      'For SSE the `Last-Event-ID` header wins over it. Older than the retained events: 410 `cursor_expired`.',
    example: '0',
    type: String,
  })
  @IsOptional()
  @IsString()
  @MaxLength(32)
  after?: string;

  @ApiPropertyOptional({ minimum: 1, maximum: 1000, default: 100, description: 'Page size (JSON only).' })
  @IsOptional()
  @Transform(toDecimalInt)
  @IsInt()
  @Min(1)
  @Max(1000)
  limit?: number;
}
