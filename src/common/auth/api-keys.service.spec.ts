import { ApiKeyRow, ApiKeyTable, hashApiKey, keyIdentityOf } from './api-keys.service';

// The module object itself (a namespace import would be a copy the spy does not reach).
const crypto: typeof import('node:crypto') = require('node:crypto');

const rows: ApiKeyRow[] = [
  { id: 'key_a', key_hash: hashApiKey('dev-key-0001'), tenant_id: 'tenant_dev', subject_id: 'user_dev', role: 'admin' },
  { id: 'key_b', key_hash: hashApiKey('other-key-0002'), tenant_id: 'tenant_b', subject_id: 'user_b', role: 'member' },
];
const bearer = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });

describe('API key hashing', () => {
  afterEach(() => jest.restoreAllMocks());

  it('is the hex SHA-256 of the raw key', () => {
    expect(hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashApiKey('dev-key-0001')).toBe(crypto.createHash('sha256').update('dev-key-0001', 'utf8').digest('hex'));
  });

  it('resolves a request key once per request (one hash), and never answers for another request with it', () => {
    const table = new ApiKeyTable(rows);
    const spy = jest.spyOn(crypto, 'hash');
    const req = bearer('dev-key-0001');
    const first = table.principalOfRequest(req);
    expect(first).toMatchObject({ keyId: 'key_a', tenantId: 'tenant_dev', role: 'admin' });
    expect(spy).toHaveBeenCalledTimes(1);
    expect(table.principalOfRequest(req)).toBe(first);
    expect(spy).toHaveBeenCalledTimes(1);
    expect(table.principalOfRequest(bearer('other-key-0002'))).toMatchObject({ keyId: 'key_b' });
    expect(table.principalOfRequest(bearer('dev-key-0001'))).toBe(first);
    expect(spy).toHaveBeenCalledTimes(3);
  });
});

describe('ApiKeyTable', () => {
  const table = new ApiKeyTable(rows);

  it('knows every key of the table by hash, and nothing else', () => {
    expect(table.size).toBe(2);
    expect(table.principalOfHash(hashApiKey('dev-key-0001'))).toEqual({ keyId: 'key_a', tenantId: 'tenant_dev', subjectId: 'user_dev', role: 'admin' });
    expect(table.principalOfHash(hashApiKey('unknown-key-0003'))).toBeNull();
    expect(ApiKeyTable.empty.principalOfHash(hashApiKey('dev-key-0001'))).toBeNull();
  });

  it('a missing, malformed, non-Bearer or unknown key is no principal (memoised too)', () => {
    for (const headers of [{}, { authorization: 'Basic ZGV2LWtleS0wMDAx' }, { authorization: 'Bearer ' }, { authorization: 'Bearer dev key' }, { authorization: 'Bearer unknown-key-0003' }, { authorization: ['Bearer dev-key-0001'] }]) {
      const req = { headers } as never;
      expect(table.principalOfRequest(req)).toBeNull();
      expect(table.principalOfRequest(req)).toBeNull();
    }
    expect(table.principalOfRequest({ headers: { authorization: 'bearer   dev-key-0001  ' } })).toMatchObject({ keyId: 'key_a' });
  });

  it("a key's identity for shared limits is the same on every node and database (a hash prefix, never the key or its id)", () => {
    const p = table.principalOfHash(hashApiKey('dev-key-0001'))!;
    const elsewhere = new ApiKeyTable([{ ...rows[0], id: 'key_other_row' }]).principalOfHash(hashApiKey('dev-key-0001'))!;
    expect(keyIdentityOf(p)).toBe(hashApiKey('dev-key-0001').slice(0, 32));
    expect(keyIdentityOf(elsewhere)).toBe(keyIdentityOf(p));
    expect(keyIdentityOf(p)).not.toContain('dev-key');
    expect(keyIdentityOf({ keyId: 'key_x', tenantId: 't', subjectId: 's', role: 'member' })).toBe('key_x');
  });
});
