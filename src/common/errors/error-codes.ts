/** Every public error code of the contract, with its HTTP status, type and retryability. */
export type ErrorType =
  | 'invalid_request'
  | 'authentication'
  | 'permission'
  | 'not_found'
  | 'conflict'
  | 'invalid_state'
  | 'rate_limit'
  | 'server_error';

export interface ErrorCodeSpec {
  status: number;
  type: ErrorType;
  retryable: boolean;
}

export const ERROR_CODES = {
  invalid_request: { status: 400, type: 'invalid_request', retryable: false },
  idempotency_key_required: { status: 400, type: 'invalid_request', retryable: false },
  invalid_cursor: { status: 400, type: 'invalid_request', retryable: false },
  unauthorized: { status: 401, type: 'authentication', retryable: false },
  forbidden: { status: 403, type: 'permission', retryable: false },
  not_found: { status: 404, type: 'not_found', retryable: false },
  session_not_found: { status: 404, type: 'not_found', retryable: false },
  run_not_found: { status: 404, type: 'not_found', retryable: false },
  message_not_found: { status: 404, type: 'not_found', retryable: false },
  attachment_not_found: { status: 404, type: 'not_found', retryable: false },
  approval_not_found: { status: 404, type: 'not_found', retryable: false },
  agent_not_found: { status: 404, type: 'not_found', retryable: false },
  secret_not_found: { status: 404, type: 'not_found', retryable: false },
  input_not_found: { status: 404, type: 'not_found', retryable: false },
  webhook_not_found: { status: 404, type: 'not_found', retryable: false },
  automation_not_found: { status: 404, type: 'not_found', retryable: false },
  invocation_not_found: { status: 404, type: 'not_found', retryable: false },
  session_conflict: { status: 409, type: 'conflict', retryable: false },
  session_busy: { status: 409, type: 'conflict', retryable: true },
  session_archived: { status: 409, type: 'invalid_state', retryable: false },
  idempotency_conflict: { status: 409, type: 'conflict', retryable: false },
  idempotency_in_progress: { status: 409, type: 'conflict', retryable: true },
  attachment_not_ready: { status: 409, type: 'invalid_state', retryable: true },
  attachment_expired: { status: 409, type: 'invalid_state', retryable: false },
  approval_already_decided: { status: 409, type: 'conflict', retryable: false },
  approval_not_pending: { status: 409, type: 'invalid_state', retryable: false },
  run_finished: { status: 409, type: 'invalid_state', retryable: false },
  tool_output_not_expected: { status: 409, type: 'invalid_state', retryable: false },
  callback_not_expected: { status: 409, type: 'invalid_state', retryable: false },
  agent_read_only: { status: 409, type: 'conflict', retryable: false },
  automation_limit_reached: { status: 409, type: 'conflict', retryable: false },
  request_timeout: { status: 408, type: 'invalid_request', retryable: true },
  cursor_expired: { status: 410, type: 'invalid_request', retryable: false },
  payload_too_large: { status: 413, type: 'invalid_request', retryable: false },
  uri_too_long: { status: 414, type: 'invalid_request', retryable: false },
  unsupported_media_type: { status: 415, type: 'invalid_request', retryable: false },
  attachment_rejected: { status: 422, type: 'invalid_state', retryable: false },
  rate_limited: { status: 429, type: 'rate_limit', retryable: true },
  quota_exceeded: { status: 429, type: 'rate_limit', retryable: false },
  headers_too_large: { status: 431, type: 'invalid_request', retryable: false },
  internal_error: { status: 500, type: 'server_error', retryable: true },
  unavailable: { status: 503, type: 'server_error', retryable: true },
} as const satisfies Record<string, ErrorCodeSpec>;

export type ErrorCode = keyof typeof ERROR_CODES;

export function specOf(code: ErrorCode): ErrorCodeSpec {
  return ERROR_CODES[code];
}
