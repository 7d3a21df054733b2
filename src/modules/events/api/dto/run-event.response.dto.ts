import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { toDecimalInt } from '../../../../common/http/pagination';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import type { PublicRunEvent } from '../../domain/run-event';

export class RunEventListResponseDto {
  @ApiProperty({ enum: ['list'], example: 'list' }) object!: 'list';
  @ApiProperty({ type: 'array', items: { $ref: '#/components/schemas/RunEvent' }, description: 'Events in cursor order, each with the `data` of its `type`.' })
  data!: PublicRunEvent[];
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
