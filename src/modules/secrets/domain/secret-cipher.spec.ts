import { createHash, randomBytes } from 'node:crypto';
import { SecretCipher } from './secret-cipher';

describe('SecretCipher (AES-256-GCM, tenant + name + version as AAD)', () => {
  const cipher = new SecretCipher(randomBytes(32));
  const value = 'crm-token-3f9a1c7e2b \u00e9\u{1F511}';

  it('round-trips a value, and the sealed bytes hold no trace of it', () => {
    const sealed = cipher.seal('tenant_a', 'CRM_TOKEN', 1, value);
    expect(cipher.open('tenant_a', 'CRM_TOKEN', 1, sealed)).toBe(value);
    expect(sealed.includes(Buffer.from(value, 'utf8'))).toBe(false);
    expect(sealed.includes(Buffer.from('crm-token'))).toBe(false);
    expect(sealed.length).toBe(1 + 12 + 16 + Buffer.byteLength(value));
  });

  it('uses a fresh IV for every seal: the same value twice gives different bytes', () => {
    const a = cipher.seal('tenant_a', 'CRM_TOKEN', 1, value);
    const b = cipher.seal('tenant_a', 'CRM_TOKEN', 1, value);
    expect(a.subarray(1, 13).equals(b.subarray(1, 13))).toBe(false);
    expect(a.equals(b)).toBe(false);
    const ivs = new Set(Array.from({ length: 50 }, () => cipher.seal('t', 'N', 1, 'x').subarray(1, 13).toString('hex')));
    expect(ivs.size).toBe(50);
  });

  it.each([
    ['another tenant', 'tenant_b', 'CRM_TOKEN', 1],
    ['another name', 'tenant_a', 'OTHER_TOKEN', 1],
    ['another version', 'tenant_a', 'CRM_TOKEN', 2],
  ])('refuses to open with %s in the AAD', (_what, tenant, name, version) => {
    const sealed = cipher.seal('tenant_a', 'CRM_TOKEN', 1, value);
    expect(() => cipher.open(tenant as string, name as string, version as number, sealed)).toThrow();
  });

  it('refuses another key, a flipped byte and a truncated or unknown format', () => {
    const sealed = cipher.seal('tenant_a', 'CRM_TOKEN', 1, value);
    expect(() => new SecretCipher(randomBytes(32)).open('tenant_a', 'CRM_TOKEN', 1, sealed)).toThrow();
    const flipped = Buffer.from(sealed);
    flipped[flipped.length - 1] ^= 1;
    expect(() => cipher.open('tenant_a', 'CRM_TOKEN', 1, flipped)).toThrow();
    expect(() => cipher.open('tenant_a', 'CRM_TOKEN', 1, sealed.subarray(0, 20))).toThrow('not a sealed secret');
    const v2 = Buffer.from(sealed);
    v2[0] = 2;
    expect(() => cipher.open('tenant_a', 'CRM_TOKEN', 1, v2)).toThrow('not a sealed secret');
    expect(() => new SecretCipher(randomBytes(16))).toThrow('32 bytes');
  });

  it('fingerprints request bodies with a key: stable for one key, different under another, never the plain SHA-256', () => {
    const body = '{"value":"crm-token-3f9a1c7e2b"}';
    expect(cipher.fingerprint(body)).toBe(cipher.fingerprint(body));
    expect(cipher.fingerprint(body)).toMatch(/^[0-9a-f]{64}$/);
    expect(cipher.fingerprint(body)).not.toBe(cipher.fingerprint('{"value":"other"}'));
    expect(new SecretCipher(randomBytes(32)).fingerprint(body)).not.toBe(cipher.fingerprint(body));
    expect(cipher.fingerprint(body)).not.toBe(createHash('sha256').update(body).digest('hex'));
  });
});
