import { applyDecorators } from '@nestjs/common';
import { ApiExtraModels, ApiProperty, ApiPropertyOptional, ApiResponse, getSchemaPath } from '@nestjs/swagger';
import { ERROR_CODES, ErrorCode } from './error-codes';
import type { ErrorEnvelope } from './error-envelope';

export class FieldErrorDto {
  @ApiProperty({ example: 'title' }) field!: string;
  @ApiProperty({ example: 'title must be shorter than or equal to 200 characters' }) message!: string;
}

export class ErrorBodyDto {
  @ApiProperty({ description: 'Stable machine-readable code; branch on this, never on message.', example: 'session_not_found' })
  code!: string;
  @ApiProperty({ example: 'session not found' }) message!: string;
  @ApiProperty({ enum: ['invalid_request', 'authentication', 'permission', 'not_found', 'conflict', 'invalid_state', 'rate_limit', 'server_error'], example: 'not_found' })
  type!: string;
  @ApiProperty({ description: 'True when the same request may succeed if retried later.', example: false }) retryable!: boolean;
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

/** An example envelope for a code (what a client would really receive). */
export function errorExample(code: ErrorCode): ErrorEnvelope['error'] extends infer E ? { error: E } : never {
  const spec = ERROR_CODES[code];
  return {
    error: {
      code,
      message: code.replace(/_/g, ' '),
      type: spec.type,
      retryable: spec.retryable,
      request_id: 'req_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B',
      run_id: null,
      details: code === 'invalid_request' ? { errors: [{ field: 'title', message: 'title must be a string' }] } : {},
    },
  } as never;
}

/** Documents the error responses of a route, grouped by status, listing the codes it can return. */
export function ApiErrors(...codes: ErrorCode[]) {
  // Every /v1 route can answer 401, 429 (rate limit), 500 and 503 (database unavailable).
  const all: ErrorCode[] = ['unauthorized', ...codes, 'rate_limited', 'internal_error', 'unavailable'];
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of all) {
    const status = ERROR_CODES[code].status;
    const list = byStatus.get(status) ?? [];
    if (!list.includes(code)) byStatus.set(status, [...list, code]);
  }
  return applyDecorators(
    ApiExtraModels(ErrorEnvelopeDto),
    ...[...byStatus.entries()].map(([status, list]) =>
      ApiResponse({
        status,
        description: `Error envelope. code: ${list.map((c) => `\`${c}\``).join(', ')}`,
        content: {
          'application/json': {
            schema: { $ref: getSchemaPath(ErrorEnvelopeDto) },
            examples: Object.fromEntries(list.map((c) => [c, { value: errorExample(c) }])),
          },
        },
      }),
    ),
  );
}
