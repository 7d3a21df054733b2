import { createHash, randomBytes } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AUDIT_HMAC_KEY_MIN_LENGTH } from './app-config';

/**
 * A key kept in a file under DATA_DIR (the audit chain's, the webhook secrets', the tenant secrets'): read when the
 * file exists, else generated (32 random bytes, base64url) and written with mode 0600, created
 * with `wx` so two processes starting at once on one DATA_DIR keep the first one's key. A file
 * holding fewer than AUDIT_HMAC_KEY_MIN_LENGTH characters is refused (`what` names the key).
 */
export function readOrCreateKeyFile(file: string, what: string): string {
  try {
    return checked(readFileSync(file, 'utf8'), file, what);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(join(file, '..'), { recursive: true });
  const generated = randomBytes(32).toString('base64url');
  try {
    writeFileSync(file, `${generated}\n`, { mode: 0o600, flag: 'wx' });
    chmodSync(file, 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return checked(readFileSync(file, 'utf8'), file, what);
  }
  return generated;
}

function checked(text: string, file: string, what: string): string {
  const key = text.trim();
  if (key.length < AUDIT_HMAC_KEY_MIN_LENGTH) throw new Error(`${file} holds no usable ${what} (under ${AUDIT_HMAC_KEY_MIN_LENGTH} characters)`);
  return key;
}

/** What an encryption key at rest is called and where its generated file lives. */
export interface EncryptionKeySpec {
  /** The environment variable (`WEBHOOK_SECRET_KEY`, `SECRETS_KEY`). */
  variable: string;
  /** Its file under DATA_DIR. */
  file: string;
  /** What it encrypts, for the warning ("webhook secrets"). */
  protects: string;
  /** The logger's context. */
  context: string;
}

const resolvedKeys = new Map<string, Buffer>();

/**
 * An AES-256-GCM key at rest: SHA-256 of the configured text, or of the one generated into
 * DATA_DIR (cached per file). With DATABASE_URL and a generated key it warns that every node
 * needs the same key (`loadConfig` refuses a production start-up without one).
 */
export function resolveEncryptionKey(spec: EncryptionKeySpec, configured: string | null, config: { dataDir: string; databaseUrl: string | null }): Buffer {
  if (configured !== null) return sha256(configured);
  const file = join(config.dataDir, spec.file);
  const cached = resolvedKeys.get(file);
  if (cached) return cached;
  const key = sha256(readOrCreateKeyFile(file, `${spec.protects} key`));
  if (config.databaseUrl) {
    new Logger(spec.context).warn(
      `${spec.variable} is not set: ${spec.protects} are encrypted with ${file} (generated). Every node of this database needs the same key: ` +
        `set ${spec.variable} (required with NODE_ENV=production).`,
    );
  }
  resolvedKeys.set(file, key);
  return key;
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
