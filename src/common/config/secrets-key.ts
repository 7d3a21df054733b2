import { AppConfig } from './app-config';
import { resolveEncryptionKey } from './generated-key-file';

/** The generated key's file under DATA_DIR. */
export const SECRETS_KEY_FILE = 'secrets.key';

/**
 * The key that encrypts the tenants' secrets at rest (AES-256-GCM): SHA-256 of `SECRETS_KEY`, or
 * of the one generated into `DATA_DIR/secrets.key` (32 random bytes, base64url, file mode 0600) -
 * as the webhook key (webhook-secret-key.ts).
 */
export function resolveSecretsKey(config: Pick<AppConfig, 'secretsKey' | 'dataDir' | 'databaseUrl'>): Buffer {
  return resolveEncryptionKey({ variable: 'SECRETS_KEY', file: SECRETS_KEY_FILE, protects: 'tenant secrets', context: 'SecretsKey' }, config.secretsKey, config);
}
