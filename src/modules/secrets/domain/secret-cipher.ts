import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

const FORMAT_V1 = 0x01;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Secrets at rest: AES-256-GCM under the server's key (SECRETS_KEY), a fresh random 12-byte IV per
 * write, and the secret's identity (tenant, name, version) as additional authenticated data, so
 * a ciphertext copied to another tenant's row, another name or another version does not open.
 * Layout: `0x01 | iv (12) | tag (16) | ciphertext`.
 */
export class SecretCipher {
  private readonly fingerprintKey: Buffer;

  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('the secrets key must be 32 bytes');
    // A key of its own for request fingerprints: never the encryption key itself.
    this.fingerprintKey = createHmac('sha256', key).update('agent-api secrets: idempotency fingerprint').digest();
  }

  seal(tenantId: string, name: string, version: number, value: string): Buffer {
    return this.sealWith(aad(tenantId, name, version), value);
  }

  /** Throws when the bytes were not sealed by this key for exactly this tenant, name and version. */
  open(tenantId: string, name: string, version: number, sealed: Buffer): string {
    return this.openWith(aad(tenantId, name, version), sealed);
  }

  /**
   * A value a run resolved (`${secret:NAME}` or `${env:NAME}`), sealed for that run and name, so
   * that what arrives later on the run can be scrubbed of it on any node (the scrubbing rule).
   */
  sealUse(tenantId: string, runId: string, name: string, value: string): Buffer {
    return this.sealWith(useAad(tenantId, runId, name), value);
  }

  openUse(tenantId: string, runId: string, name: string, sealed: Buffer): string {
    return this.openWith(useAad(tenantId, runId, name), sealed);
  }

  private sealWith(additional: Buffer, value: string): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(additional);
    const ct = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.of(FORMAT_V1), iv, cipher.getAuthTag(), ct]);
  }

  private openWith(additional: Buffer, sealed: Buffer): string {
    if (sealed.length < 1 + IV_BYTES + TAG_BYTES || sealed[0] !== FORMAT_V1) throw new Error('not a sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, sealed.subarray(1, 1 + IV_BYTES));
    decipher.setAAD(additional);
    decipher.setAuthTag(sealed.subarray(1 + IV_BYTES, 1 + IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(sealed.subarray(1 + IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  }

  /** A keyed hash naming one value of one name (the row key of a run's use): offers nothing to guess a value against. */
  useKey(name: string, value: string): string {
    return createHmac('sha256', this.fingerprintKey).update(`use\n${name}\n${value}`, 'utf8').digest('hex').slice(0, 32);
  }

  /**
   * The Idempotency-Key fingerprint of a request that carries a value: keyed (HMAC-SHA256), so that
   * the idempotency table, unlike a plain SHA-256 of the body, offers nothing to guess a value against.
   */
  fingerprint(canonicalBody: string): string {
    return createHmac('sha256', this.fingerprintKey).update(canonicalBody, 'utf8').digest('hex');
  }
}

function useAad(tenantId: string, runId: string, name: string): Buffer {
  return Buffer.from(`agent-api run secret use v1\n${tenantId}\n${runId}\n${name}`, 'utf8');
}

/** Tenant ids (`[A-Za-z0-9_.-]`) and names (`[A-Z0-9_]`) hold no newline: the encoding is unambiguous. */
function aad(tenantId: string, name: string, version: number): Buffer {
  return Buffer.from(`agent-api secret v1\n${tenantId}\n${name}\n${version}`, 'utf8');
}
