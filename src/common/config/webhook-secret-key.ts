import { AppConfig } from './app-config';
import { resolveEncryptionKey } from './generated-key-file';

/** The generated key's file under DATA_DIR. */
export const WEBHOOK_SECRET_KEY_FILE = 'webhook-secret.key';

/**
 * The key that encrypts webhook signing secrets at rest (AES-256-GCM): SHA-256 of
 * `WEBHOOK_SECRET_KEY`, or of the one generated into `DATA_DIR/webhook-secret.key` (32 random
 * bytes, base64url, file mode 0600) - as the audit key (audit-hmac-key.ts).
 */
export function resolveWebhookSecretKey(config: Pick<AppConfig, 'webhookSecretKey' | 'dataDir' | 'databaseUrl'>): Buffer {
  return resolveEncryptionKey({ variable: 'WEBHOOK_SECRET_KEY', file: WEBHOOK_SECRET_KEY_FILE, protects: 'webhook secrets', context: 'WebhookKey' }, config.webhookSecretKey, config);
}
