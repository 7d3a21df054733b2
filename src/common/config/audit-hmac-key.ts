import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import { AppConfig, AUDIT_HMAC_KEY_MIN_LENGTH } from './app-config';

/** The generated key's file under DATA_DIR. */
export const AUDIT_HMAC_KEY_FILE = 'audit-hmac.key';

const resolved = new Map<string, Buffer>();

/**
 * The key of the audit hash chain: `AUDIT_HMAC_KEY`, or else the one generated into
 * `DATA_DIR/audit-hmac.key` (32 random bytes, base64url, file mode 0600), created on first use
 * and read on every later start. `loadConfig` already refused a production start-up with
 * DATABASE_URL and no key; with DATABASE_URL outside production the generated key is used with
 * a warning (every node writing to that database must then share DATA_DIR or set the key).
 * Resolved once per process and directory (the migrations and the trail both ask).
 */
export function resolveAuditHmacKey(config: Pick<AppConfig, 'auditHmacKey' | 'dataDir' | 'databaseUrl'>): Buffer {
  if (config.auditHmacKey !== null) return Buffer.from(config.auditHmacKey, 'utf8');
  const cached = resolved.get(config.dataDir);
  if (cached) return cached;
  const file = join(config.dataDir, AUDIT_HMAC_KEY_FILE);
  const key = readOrCreate(file);
  if (config.databaseUrl) {
    new Logger('AuditKey').warn(
      `AUDIT_HMAC_KEY is not set: the audit chain is keyed with ${file} (generated). Every node writing to this database needs the same key: ` +
        'set AUDIT_HMAC_KEY (required with NODE_ENV=production).',
    );
  }
  resolved.set(config.dataDir, key);
  return key;
}

function readOrCreate(file: string): Buffer {
  try {
    return checked(readFileSync(file, 'utf8'), file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(join(file, '..'), { recursive: true });
  const generated = randomBytes(32).toString('base64url');
  try {
    // 'wx': two processes starting at once on one DATA_DIR keep the first one's key.
    writeFileSync(file, `${generated}\n`, { mode: 0o600, flag: 'wx' });
    chmodSync(file, 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return checked(readFileSync(file, 'utf8'), file);
  }
  return Buffer.from(generated, 'utf8');
}

function checked(text: string, file: string): Buffer {
  const key = text.trim();
  if (key.length < AUDIT_HMAC_KEY_MIN_LENGTH) throw new Error(`${file} holds no usable audit key (under ${AUDIT_HMAC_KEY_MIN_LENGTH} characters)`);
  return Buffer.from(key, 'utf8');
}
