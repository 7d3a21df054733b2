import { applyDecorators } from '@nestjs/common';
import { ApiHeader, ApiResponse } from '@nestjs/swagger';

/** Documents the Idempotency-Key header and the replay behaviour of a POST. */
export function ApiIdempotencyKey(required: boolean) {
  return applyDecorators(
    ApiHeader({
      name: 'Idempotency-Key',
      required,
      description:
        (required ? 'Required. ' : 'Optional. ') +
        '1..255 printable ASCII; a header that is present but empty or otherwise outside that is 400 `invalid_request`. A retry with the same key and body returns the stored response byte-for-byte with `Idempotent-Replayed: true`; ' +
        'another body: 409 `idempotency_conflict`; while the first is running: 409 `idempotency_in_progress` (Retry-After: 1).',
      schema: { type: 'string', minLength: 1, maxLength: 255, example: '6f1c2b7e-3f0e-4d0a-9a63-2d0a0c7f6a11' },
    }),
    ApiResponse({ status: 400, description: '`idempotency_key_required` when the key is required and missing; `invalid_request` when it is present but not 1..255 printable ASCII (empty included).' }),
  );
}
