import { applyDecorators, Type } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiResponse } from '@nestjs/swagger';

/** Documents the Idempotency-Key header and the replay behaviour of a POST. */
export function ApiIdempotencyKey(required: boolean) {
  return applyDecorators(
    ApiHeader({
      name: 'Idempotency-Key',
      required,
      description:
        (required ? 'Required' : 'Optional') +
        ': a fresh UUID per logical operation, the same one for its retries (1..255 printable ASCII; a header that is present but empty or otherwise outside that is 400 `invalid_request`). A retry with the same key and body returns the stored response byte-for-byte with `Idempotent-Replayed: true`; ' +
        'another body: 409 `idempotency_conflict`; while the first is running: 409 `idempotency_in_progress` (Retry-After: 1). ' +
        'Keys are scoped to your API key, the operation and its path ids, and kept 24 h. ' +
        'In Swagger UI (/docs) leave the pre-filled value (or an empty field): the page sends a fresh UUID (`crypto.randomUUID()`) with every request; a key you type is sent as typed.',
      // No example: Swagger UI would pre-fill it, and every "Try it out" would replay the first one's response.
      schema: { type: 'string', minLength: 1, maxLength: 255 },
    }),
    ApiResponse({ status: 400, description: '`idempotency_key_required` when the key is required and missing; `invalid_request` when it is present but not 1..255 printable ASCII (empty included).' }),
  );
}

/**
 * A JSON request body with named examples, the first of which Swagger UI pre-fills: each must
 * succeed when sent as is (test/e2e/openapi-examples.e2e-spec.ts sends every one of them).
 */
export function ApiJsonBody(type: Type<unknown>, examples: Record<string, { summary: string; value: unknown; description?: string }>) {
  return ApiBody({ type, examples });
}
