import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AUDIT_HMAC_KEY_MIN_LENGTH } from './app-config';

/**
 * A key kept in a file under DATA_DIR (the audit chain's, the webhook secrets'): read when the
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
