import { createHash } from 'node:crypto';

/** Strings JSON.stringify writes unchanged between quotes (printable ASCII but `"` and `\\`). */
const PLAIN_STRING = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** JSON with object keys sorted at every depth, so equal bodies give equal bytes. */
export function canonicalJson(value: unknown): string {
  if (typeof value === 'string') return PLAIN_STRING.test(value) ? `"${value}"` : JSON.stringify(value);
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  // Loops and string concatenation, no intermediate arrays: this runs for every request body and
  // every audit record (hash, checkpoint), on the request path (bench/README.md, session 11).
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      out += (i === 0 ? '' : ',') + canonicalJson(v === undefined ? null : v);
    }
    return out + ']';
  }
  const obj = value as Record<string, unknown>;
  // Code-unit order (what `<` on strings compares), the same as the default sort.
  const keys = Object.keys(obj).sort();
  let out = '{';
  let first = true;
  for (const k of keys) {
    const v = obj[k];
    if (v === undefined) continue;
    out += (first ? '' : ',') + (PLAIN_STRING.test(k) ? `"${k}"` : JSON.stringify(k)) + ':' + canonicalJson(v);
    first = false;
  }
  return out + '}';
}

/** SHA-256 (hex) of the canonical JSON of a request body. */
export function fingerprintOf(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body ?? {}), 'utf8').digest('hex');
}

/** Scope of a key: operation (method + route template) and the path ids, in a stable form. */
export function scopeOf(method: string, routeTemplate: string, params: Record<string, string>): string {
  const ids = Object.keys(params)
    .sort()
    .map((k) => `${k}=${params[k]}`)
    .join('&');
  return `${method.toUpperCase()} ${routeTemplate}${ids ? ` ${ids}` : ''}`;
}

const KEY_RE = /^[\x20-\x7E]{1,255}$/;
export function isValidIdempotencyKey(key: string): boolean {
  return KEY_RE.test(key);
}

/**
 * Which failed outcomes are stored and replayed (CONTRACT section 3): final 4xx business
 * outcomes are; validation errors, 401, 403, 429, 5xx, retryable errors and idempotency_* are not.
 */
export function isStorableError(status: number, code: string, retryable: boolean): boolean {
  if (status < 400 || status >= 500) return false;
  if (status === 400 || status === 401 || status === 403 || status === 429) return false;
  if (retryable) return false;
  return !code.startsWith('idempotency_');
}
