import { createHash, createPublicKey, KeyObject, sign, verify } from 'node:crypto';
import { canonicalJson } from '../../idempotency/domain/fingerprint';

/**
 * A signed checkpoint: the tenant's chain head `{tenant_id, seq, hash, at}` signed with Ed25519
 * under AUDIT_SIGNING_KEY. Whoever holds the public key checks that record `seq` had `hash` at
 * `at`, and so (the hashes chain) every record before it: rewriting one needs the signing key.
 */
export interface AuditCheckpoint {
  tenantId: string;
  seq: number;
  hash: string;
  at: Date;
  /** `keyIdOf` the public key that checks `signature`. */
  keyId: string;
  /** base64 of the 64-byte Ed25519 signature over `canonicalCheckpoint`. */
  signature: string;
}

/**
 * What is signed: the UTF-8 bytes of the canonical JSON (keys sorted, no whitespace) of
 * `{"at":"<RFC 3339 UTC with ms>","hash":"<64 hex>","seq":<number>,"tenant_id":"<id>"}`.
 */
export function canonicalCheckpoint(c: Pick<AuditCheckpoint, 'tenantId' | 'seq' | 'hash' | 'at'>): string {
  return canonicalJson({ tenant_id: c.tenantId, seq: c.seq, hash: c.hash, at: c.at.toISOString() });
}

/** A public key's id: the first 16 hex digits of SHA-256 over its SubjectPublicKeyInfo (DER). */
export function keyIdOf(publicKey: KeyObject): string {
  return createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('hex').slice(0, 16);
}

/** Whether `signature` is `publicKey`'s Ed25519 signature of the checkpoint. */
export function checkpointSignatureValid(publicKey: KeyObject, c: AuditCheckpoint): boolean {
  try {
    return verify(null, Buffer.from(canonicalCheckpoint(c), 'utf8'), publicKey, Buffer.from(c.signature, 'base64'));
  } catch {
    return false;
  }
}

/** Parses an Ed25519 public key: PEM (SPKI) or base64 of the SPKI DER. */
export function parsePublicKey(text: string): KeyObject {
  const trimmed = text.trim();
  const key = trimmed.startsWith('-----BEGIN')
    ? createPublicKey({ key: trimmed, format: 'pem' })
    : createPublicKey({ key: Buffer.from(trimmed, 'base64'), format: 'der', type: 'spki' });
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`an Ed25519 key is needed, got ${key.asymmetricKeyType ?? 'an unknown type'}`);
  return key;
}

/** The checkpoint signer: AUDIT_SIGNING_KEY (or the key generated into DATA_DIR). */
export class AuditSigner {
  readonly publicKey: KeyObject;
  readonly keyId: string;
  readonly publicKeyPem: string;

  constructor(private readonly privateKey: KeyObject) {
    this.publicKey = createPublicKey(privateKey);
    this.keyId = keyIdOf(this.publicKey);
    this.publicKeyPem = this.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  }

  sign(head: Pick<AuditCheckpoint, 'tenantId' | 'seq' | 'hash' | 'at'>): AuditCheckpoint {
    const signature = sign(null, Buffer.from(canonicalCheckpoint(head), 'utf8'), this.privateKey).toString('base64');
    return { ...head, keyId: this.keyId, signature };
  }
}

/** A signing public key as listed by `GET /v1/admin/audit/public-key` (old ones stay listed after a rotation). */
export interface AuditPublicKey {
  keyId: string;
  publicKeyPem: string;
  createdAt: Date;
}
