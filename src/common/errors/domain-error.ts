import { ErrorCode } from './error-codes';

/**
 * The only error type business code throws. It carries a contract `code` and machine-readable
 * `details`; the global filter maps it to HTTP status, type and retryability.
 */
export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
    readonly runId: string | null = null,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export interface FieldError {
  field: string;
  message: string;
}

export function invalidRequest(message: string, errors: FieldError[] = []): DomainError {
  return new DomainError('invalid_request', message, { errors });
}

/** Optimistic concurrency failure inside a repository: the row moved since it was read. */
export class ConcurrencyConflict extends Error {
  constructor(
    readonly resource: string,
    readonly id: string,
    readonly expectedVersion: number,
  ) {
    super(`${resource} ${id} changed since version ${expectedVersion}`);
    this.name = 'ConcurrencyConflict';
  }
}
