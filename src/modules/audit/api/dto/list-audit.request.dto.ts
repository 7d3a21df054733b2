import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsISO8601, IsOptional, IsString, MaxLength } from 'class-validator';
import { ListQueryDto } from '../../../../common/http/pagination';

/**
 * Filters of `GET /v1/admin/audit` (all optional, combined with AND) plus the list parameters.
 * No `example`s: Swagger UI would pre-fill them and "Try it out" would find nothing.
 */
export class ListAuditRequestDto extends ListQueryDto {
  @ApiPropertyOptional({ description: 'Only records about this session (requests on it, its runs, their events), e.g. `sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B`.' })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  session_id?: string;

  @ApiPropertyOptional({ description: 'Only records about this run (requests on it and its events), e.g. `run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B`.' })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  run_id?: string;

  @ApiPropertyOptional({ description: "The actor's subject id, e.g. `user_a1`." })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  actor?: string;

  @ApiPropertyOptional({
    description: 'Exact action: `<METHOD> <route template>` for requests, `run_event.<type>` for run events, e.g. `POST /v1/sessions/:id/archive`.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(256)
  action?: string;

  @ApiPropertyOptional({ description: 'Only records about this resource id, e.g. `sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B`.' })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  resource_id?: string;

  @ApiPropertyOptional({ description: 'occurred_at >= from (RFC 3339), e.g. `2025-01-01T00:00:00.000Z`.' })
  @IsOptional()
  @IsISO8601({ strict: true })
  from?: string;

  @ApiPropertyOptional({ description: 'occurred_at < to (RFC 3339), e.g. `2025-01-02T00:00:00.000Z`.' })
  @IsOptional()
  @IsISO8601({ strict: true })
  to?: string;
}
