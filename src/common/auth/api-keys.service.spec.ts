import { hashApiKey, requestKeyHash } from './api-keys.service';

// The module object itself (a namespace import would be a copy the spy does not reach).
const crypto: typeof import('node:crypto') = require('node:crypto');

describe('API key hashing', () => {
  afterEach(() => jest.restoreAllMocks());

  it('is the hex SHA-256 of the raw key', () => {
    expect(hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashApiKey('dev-key-0001')).toBe(crypto.createHash('sha256').update('dev-key-0001', 'utf8').digest('hex'));
  });

  it('hashes a request key once per request, and never answers for another key with a stale hash', () => {
    const spy = jest.spyOn(crypto, 'hash');
    const req = {};
    const first = requestKeyHash(req, 'dev-key-0001');
    expect(first).toBe(hashApiKey('dev-key-0001'));
    spy.mockClear();
    expect(requestKeyHash(req, 'dev-key-0001')).toBe(first);
    expect(spy).not.toHaveBeenCalled();
    expect(requestKeyHash(req, 'other-key-0002')).toBe(hashApiKey('other-key-0002'));
    expect(requestKeyHash({}, 'dev-key-0001')).toBe(first);
  });
});
