import { createPrivateKey, generateKeyPairSync, KeyObject } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';

/** The generated signing key's file under DATA_DIR. */
export const AUDIT_SIGNING_KEY_FILE = 'audit-signing-key.pem';

/** Parses an Ed25519 private key: PEM (PKCS#8) or base64 of the PKCS#8 DER. Throws with a reason. */
export function parseSigningKey(text: string): KeyObject {
  const trimmed = text.trim();
  const key = trimmed.startsWith('-----BEGIN')
    ? createPrivateKey({ key: trimmed, format: 'pem' })
    : createPrivateKey({ key: Buffer.from(trimmed, 'base64'), format: 'der', type: 'pkcs8' });
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`an Ed25519 key is needed, got ${key.asymmetricKeyType ?? 'an unknown type'}`);
  return key;
}

const resolved = new Map<string, KeyObject>();

/**
 * The key that signs audit checkpoints: AUDIT_SIGNING_KEY, or else the one generated into
 * `DATA_DIR/audit-signing-key.pem` (Ed25519, PKCS#8 PEM, mode 0600, created with `wx` so two
 * processes starting at once keep the first one's key). `loadConfig` already refused a production
 * start-up with DATABASE_URL and no key; with DATABASE_URL outside production the generated key is
 * used with a warning (nodes with different DATA_DIRs then sign with different keys: every key is
 * listed by `GET /v1/admin/audit/public-key`, but an auditor should be given one).
 */
export function resolveAuditSigningKey(config: { auditSigningKey: string | null; dataDir: string; databaseUrl: string | null }): KeyObject {
  if (config.auditSigningKey !== null) return parseSigningKey(config.auditSigningKey);
  const file = join(config.dataDir, AUDIT_SIGNING_KEY_FILE);
  const cached = resolved.get(file);
  if (cached) return cached;
  let key: KeyObject;
  try {
    key = parseSigningKey(readFileSync(file, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`${file} holds no usable audit signing key: ${(err as Error).message}`);
    mkdirSync(config.dataDir, { recursive: true });
    const pem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    try {
      writeFileSync(file, pem, { mode: 0o600, flag: 'wx' });
      chmodSync(file, 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    key = parseSigningKey(readFileSync(file, 'utf8'));
  }
  if (config.databaseUrl) {
    new Logger('AuditSigningKey').warn(
      `AUDIT_SIGNING_KEY is not set: audit checkpoints are signed with ${file} (generated). Every node of this database should sign with the same key: ` +
        'set AUDIT_SIGNING_KEY (required with NODE_ENV=production).',
    );
  }
  resolved.set(file, key);
  return key;
}
