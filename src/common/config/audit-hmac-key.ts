import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import { AppConfig } from './app-config';
import { readOrCreateKeyFile } from './generated-key-file';

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
  const key = Buffer.from(readOrCreateKeyFile(file, 'audit key'), 'utf8');
  if (config.databaseUrl) {
    new Logger('AuditKey').warn(
      `AUDIT_HMAC_KEY is not set: the audit chain is keyed with ${file} (generated). Every node writing to this database needs the same key: ` +
        'set AUDIT_HMAC_KEY (required with NODE_ENV=production).',
    );
  }
  resolved.set(config.dataDir, key);
  return key;
}
