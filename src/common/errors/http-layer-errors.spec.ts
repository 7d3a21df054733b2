import { clientErrorResponse } from './http-layer-errors';

const REQ = 'req_test_0002';

describe("Node's clientError -> the contract envelope", () => {
  it.each([
    ['ERR_HTTP_REQUEST_TIMEOUT', 408, 'request_timeout', true],
    ['HPE_HEADER_OVERFLOW', 431, 'headers_too_large', false],
    ['HPE_INVALID_METHOD', 400, 'invalid_request', false],
    ['HPE_INVALID_CHUNK_SIZE', 400, 'invalid_request', false],
    ['HPE_UNEXPECTED_CONTENT_LENGTH', 400, 'invalid_request', false],
    [undefined, 400, 'invalid_request', false],
  ])('%s -> %i %s (retryable %s)', (code, status, errorCode, retryable) => {
    const res = clientErrorResponse({ code }, REQ);
    expect(res.status).toBe(status);
    expect(res.body.error).toMatchObject({ code: errorCode, type: 'invalid_request', retryable, request_id: REQ, run_id: null });
  });
});
