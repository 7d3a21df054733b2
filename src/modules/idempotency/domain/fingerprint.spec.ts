import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { canonicalJson, fingerprintOf, isStorableError, isValidIdempotencyKey, scopeOf } from './fingerprint';

describe('canonicalJson', () => {
  it('sorts object keys so key order does not matter', () => {
    expect(canonicalJson({ b: 1, a: 2 })).toBe('{"a":2,"b":1}');
    expect(canonicalJson({ b: 1, a: 2 })).toBe(canonicalJson({ a: 2, b: 1 }));
  });

  it('sorts keys at every depth', () => {
    const x = { z: { y: 1, x: [{ d: 1, c: 2 }] }, a: null };
    const y = { a: null, z: { x: [{ c: 2, d: 1 }], y: 1 } };
    expect(canonicalJson(x)).toBe('{"a":null,"z":{"x":[{"c":2,"d":1}],"y":1}}');
    expect(canonicalJson(y)).toBe(canonicalJson(x));
  });

  it('keeps array order (arrays are ordered data)', () => {
    expect(canonicalJson([1, 2, 3])).not.toBe(canonicalJson([3, 2, 1]));
    expect(canonicalJson(['b', 'a'])).toBe('["b","a"]');
  });

  it('drops undefined object values and writes undefined array items as null', () => {
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
    expect(canonicalJson([undefined, 1])).toBe('[null,1]');
  });

  it('writes what the straightforward definition (sorted entries, JSON.stringify of every key and scalar) writes, for any JSON value', () => {
    const reference = (v: unknown): string => {
      if (v === null || typeof v !== 'object') return JSON.stringify(v ?? null);
      if (Array.isArray(v)) return `[${v.map((x) => reference(x === undefined ? null : x)).join(',')}]`;
      const entries = Object.entries(v as Record<string, unknown>)
        .filter(([, x]) => x !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${reference(x)}`).join(',')}}`;
    };
    // Full Unicode strings (quotes, backslashes, control characters, lone surrogates) as keys and values.
    fc.assert(fc.property(fc.jsonValue({ maxDepth: 4 }), fc.string({ unit: 'binary' }), (v, s) => canonicalJson({ [s]: v, v: [s, v] }) === reference({ [s]: v, v: [s, v] })), { numRuns: 500 });
    for (const s of ['"', '\\', '\n', '\u007f', '\ud800', 'é', '__proto__', '']) expect(canonicalJson({ [s]: s })).toBe(reference({ [s]: s }));
  });

  it('encodes scalars and strings as JSON', () => {
    expect(canonicalJson('a"b')).toBe('"a\\"b"');
    expect(canonicalJson(1.5)).toBe('1.5');
    expect(canonicalJson(true)).toBe('true');
    expect(canonicalJson(null)).toBe('null');
    expect(canonicalJson(undefined)).toBe('null');
  });

  it('is valid JSON that parses back to an equal value, whatever the key order (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const text = canonicalJson(v);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(v)));
        const reordered = JSON.parse(text, function (_k, val) {
          if (val && typeof val === 'object' && !Array.isArray(val)) {
            return Object.fromEntries(Object.entries(val).reverse());
          }
          return val;
        });
        expect(canonicalJson(reordered)).toBe(text);
      }),
    );
  });
});

describe('fingerprintOf', () => {
  it('is the SHA-256 hex of the canonical JSON', () => {
    const expected = createHash('sha256').update('{"a":1,"b":[1,2]}').digest('hex');
    expect(fingerprintOf({ b: [1, 2], a: 1 })).toBe(expected);
  });

  it('equal bodies in any key order give equal fingerprints; different bodies differ', () => {
    expect(fingerprintOf({ title: 'x', metadata: { a: '1', b: '2' } })).toBe(fingerprintOf({ metadata: { b: '2', a: '1' }, title: 'x' }));
    expect(fingerprintOf({ title: 'x' })).not.toBe(fingerprintOf({ title: 'y' }));
    expect(fingerprintOf({ title: 'x' })).not.toBe(fingerprintOf({ title: 'x', extra: null }));
  });

  it('treats a missing body as {}', () => {
    expect(fingerprintOf(undefined)).toBe(fingerprintOf({}));
    expect(fingerprintOf(null)).toBe(fingerprintOf({}));
  });
});

describe('scopeOf', () => {
  it('is method + route template without path ids', () => {
    expect(scopeOf('post', '/v1/sessions', {})).toBe('POST /v1/sessions');
  });

  it('includes the path ids, sorted by name, so the same key on another session is another scope', () => {
    const a = scopeOf('POST', '/v1/sessions/:id/runs', { id: 'sess_A' });
    const b = scopeOf('POST', '/v1/sessions/:id/runs', { id: 'sess_B' });
    expect(a).toBe('POST /v1/sessions/:id/runs id=sess_A');
    expect(a).not.toBe(b);
    expect(scopeOf('POST', '/v1/runs/:id/approvals/:approval_id', { id: 'run_1', approval_id: 'apr_1' })).toBe(
      'POST /v1/runs/:id/approvals/:approval_id approval_id=apr_1&id=run_1',
    );
  });

  it('differs between operations with the same path ids', () => {
    expect(scopeOf('POST', '/v1/sessions/:id', { id: 's' })).not.toBe(scopeOf('POST', '/v1/sessions/:id/archive', { id: 's' }));
  });
});

describe('isValidIdempotencyKey', () => {
  it.each([['a'], ['6f1c2b7e-3f0e-4d0a-9a63-2d0a0c7f6a11'], ['with space and !"#$%&~'], ['x'.repeat(255)]])('accepts %s', (key) => {
    expect(isValidIdempotencyKey(key)).toBe(true);
  });

  it.each([[''], ['x'.repeat(256)], ['tab\there'], ['new\nline'], ['ünïcödé'], ['\x7f'], ['nul\0']])('rejects %j', (key) => {
    expect(isValidIdempotencyKey(key)).toBe(false);
  });
});

describe('isStorableError', () => {
  it.each([
    // stored: final 4xx business outcomes
    [404, 'agent_not_found', false, true],
    [404, 'session_not_found', false, true],
    [409, 'session_conflict', false, true],
    [409, 'session_archived', false, true],
    [409, 'run_finished', false, true],
    [410, 'cursor_expired', false, true],
    [413, 'payload_too_large', false, true],
    [422, 'attachment_rejected', false, true],
    // not stored
    [400, 'invalid_request', false, false],
    [400, 'idempotency_key_required', false, false],
    [401, 'unauthorized', false, false],
    [403, 'forbidden', false, false],
    [429, 'rate_limited', true, false],
    [409, 'session_busy', true, false],
    [409, 'attachment_not_ready', true, false],
    [409, 'idempotency_conflict', false, false],
    [409, 'idempotency_in_progress', true, false],
    [500, 'internal_error', true, false],
    [503, 'unavailable', true, false],
    [200, 'ok', false, false],
  ])('%i %s (retryable %s) -> stored %s', (status, code, retryable, stored) => {
    expect(isStorableError(status, code, retryable)).toBe(stored);
  });
});
