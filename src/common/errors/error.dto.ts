import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, ApiResponse } from '@nestjs/swagger';
import { ERROR_CODES, ErrorCode } from './error-codes';

export class FieldErrorDto {
  @ApiProperty({ example: 'title' }) field!: string;
  @ApiProperty({ example: 'title must be shorter than or equal to 200 characters' }) message!: string;
}

export class ErrorBodyDto {
  @ApiProperty({ description: 'Stable machine-readable code; branch on this, never on message.', example: 'session_not_found' })
  code!: string;
  @ApiProperty({ example: 'session not found' }) message!: string;
  @ApiProperty({ enum: ['invalid_request', 'authentication', 'permission', 'not_found', 'conflict', 'invalid_state', 'rate_limit', 'server_error'] })
  type!: string;
  @ApiProperty({ description: 'True when the same request may succeed if retried later.' }) retryable!: boolean;
  @ApiProperty({ example: 'req_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) request_id!: string;
  @ApiPropertyOptional({ nullable: true, type: String, example: null }) run_id!: string | null;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description: 'Code-specific details, e.g. `errors: [{field, message}]` for invalid_request, `current_revision` for session_conflict.',
  })
  details!: Record<string, unknown>;
}

/** The one error schema every non-2xx response uses. */
export class ErrorEnvelopeDto {
  @ApiProperty({ type: ErrorBodyDto }) error!: ErrorBodyDto;
}

/** Documents the error responses of a route, grouped by status, listing the codes it can return. */
export function ApiErrors(...codes: ErrorCode[]) {
  // Every /v1 route can answer 401, 429 (rate limit) and 503 (database unavailable).
  const all: ErrorCode[] = ['unauthorized', ...codes, 'rate_limited', 'unavailable'];
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of all) {
    const status = ERROR_CODES[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return applyDecorators(
    ...[...byStatus.entries()].map(([status, list]) =>
      ApiResponse({
        status,
        description: `Error envelope. code: ${list.map((c) => `\`${c}\``).join(', ')}`,
        type: ErrorEnvelopeDto,
      }),
    ),
  );
}
