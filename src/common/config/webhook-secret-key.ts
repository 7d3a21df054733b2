import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import { AppConfig } from './app-config';
import { readOrCreateKeyFile } from './generated-key-file';

/** The generated key's file under DATA_DIR. */
export const WEBHOOK_SECRET_KEY_FILE = 'webhook-secret.key';

const resolved = new Map<string, Buffer>();

/**
 * The key that encrypts webhook signing secrets at rest (AES-256-GCM): SHA-256 of
 * `WEBHOOK_SECRET_KEY`, or of the one generated into `DATA_DIR/webhook-secret.key` (32 random
 * bytes, base64url, file mode 0600) - as the audit key (audit-hmac-key.ts). `loadConfig` refuses a
 * production start-up with DATABASE_URL and no key.
 */
export function resolveWebhookSecretKey(config: Pick<AppConfig, 'webhookSecretKey' | 'dataDir' | 'databaseUrl'>): Buffer {
  if (config.webhookSecretKey !== null) return derive(config.webhookSecretKey);
  const cached = resolved.get(config.dataDir);
  if (cached) return cached;
  const file = join(config.dataDir, WEBHOOK_SECRET_KEY_FILE);
  const key = derive(readOrCreateKeyFile(file, 'webhook key'));
  if (config.databaseUrl) {
    new Logger('WebhookKey').warn(
      `WEBHOOK_SECRET_KEY is not set: webhook secrets are encrypted with ${file} (generated). Every node of this database needs the same key: ` +
        'set WEBHOOK_SECRET_KEY (required with NODE_ENV=production).',
    );
  }
  resolved.set(config.dataDir, key);
  return key;
}

function derive(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
