import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every depth, so equal bodies give equal bytes. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
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
