import { APICallError } from '@ai-sdk/provider';
import { ModelError } from '../../domain/model-provider';
import { mapModelError, retryAfterMs } from './model-error-mapping';

const api = (statusCode: number | undefined, body: unknown, headers: Record<string, string> = {}) =>
  new APICallError({ message: 'call failed', url: 'http://x', requestBodyValues: {}, statusCode, responseHeaders: headers, responseBody: typeof body === 'string' ? body : JSON.stringify(body) });

describe('mapModelError', () => {
  it.each<[string, unknown, string, boolean, number | undefined]>([
    ['openai 429', api(429, { error: { message: 'Rate limit reached', code: 'rate_limit_exceeded' } }, { 'retry-after': '2' }), 'model_rate_limited', true, 2000],
    ['retry-after-ms wins', api(429, { error: { message: 'slow down' } }, { 'retry-after-ms': '150', 'retry-after': '9' }), 'model_rate_limited', true, 150],
    ['anthropic 529 overloaded', api(529, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }), 'model_rate_limited', true, undefined],
    ['bedrock 503 throttling', api(503, { message: 'Too many requests, please wait' }), 'model_rate_limited', true, undefined],
    ['openai context', api(400, { error: { message: "This model's maximum context length is 128000 tokens.", code: 'context_length_exceeded' } }), 'context_length_exceeded', false, undefined],
    ['anthropic context', api(400, { type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' } }), 'context_length_exceeded', false, undefined],
    ['gemini context', api(400, { error: { code: 400, message: 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).' } }), 'context_length_exceeded', false, undefined],
    ['bedrock context', api(400, { message: 'Input is too long for requested model.' }), 'context_length_exceeded', false, undefined],
    ['401', api(401, { error: { message: 'Incorrect API key provided' } }), 'model_auth_failed', false, undefined],
    ['403', api(403, { message: 'The security token included in the request is invalid.' }), 'model_auth_failed', false, undefined],
    ['500', api(500, { error: { message: 'The server had an error' } }), 'model_error', true, undefined],
    ['502 not JSON', api(502, '<html>Bad Gateway</html>'), 'model_error', true, undefined],
    ['408', api(408, 'timeout'), 'model_error', true, undefined],
    ['400 other', api(400, { error: { message: "Invalid value for 'tools'" } }), 'model_error', false, undefined],
    ['404 model', api(404, { error: { message: 'The model does not exist' } }), 'model_error', false, undefined],
    ['a cut stream', new TypeError('terminated'), 'model_error', true, undefined],
    ['mid-stream overload event', { type: 'overloaded_error', message: 'Overloaded' }, 'model_rate_limited', true, undefined],
    ['mid-stream context event', { message: 'prompt is too long' }, 'context_length_exceeded', false, undefined],
    ['a ModelError passes through', new ModelError('model_refusal', 'no'), 'model_refusal', false, undefined],
  ])('%s', (_name, err, code, retry, after) => {
    const m = mapModelError(err);
    expect(m.error.code).toBe(code);
    expect(m.retry).toBe(retry);
    expect(m.retryAfterMs).toBe(after);
    expect(m.error.message.length).toBeLessThan(400);
  });

  it('keeps provider bodies short in the run error', () => {
    expect(mapModelError(api(400, { error: { message: 'x'.repeat(5000) } })).error.message.length).toBeLessThan(400);
  });
});

describe('retryAfterMs', () => {
  const now = Date.parse('2026-12-02T06:00:00Z');
  it.each<[Record<string, string> | undefined, number | undefined]>([
    [undefined, undefined],
    [{}, undefined],
    [{ 'retry-after': '3' }, 3000],
    [{ 'retry-after': '0.5' }, 500],
    [{ 'retry-after': 'Wed, 02 Dec 2026 06:00:04 GMT' }, 4000],
    [{ 'retry-after': 'Wed, 02 Dec 2026 05:00:00 GMT' }, 0],
    [{ 'retry-after': 'soon' }, undefined],
    [{ 'retry-after-ms': '250' }, 250],
  ])('%j -> %s', (h, ms) => expect(retryAfterMs(h, now)).toBe(ms));
});
