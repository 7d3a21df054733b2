import { sanitizeJsonText } from '../text/unsafe-text';

/** jsonb's key order (length first, then bytes), recursively: what a database read returns. */
export function jsonbOrdered(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(jsonbOrdered);
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value as Record<string, unknown>).sort((a, b) => {
    const la = Buffer.byteLength(a);
    const lb = Buffer.byteLength(b);
    if (la !== lb) return la - lb;
    return Buffer.compare(Buffer.from(a), Buffer.from(b));
  });
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = jsonbOrdered((value as Record<string, unknown>)[k]);
  return out;
}

/**
 * The text of a jsonb parameter: every JSON value the service writes to a jsonb column goes
 * through here. Unsafe text (U+0000, lone surrogates: see common/text/unsafe-text.ts), which
 * jsonb refuses, becomes U+FFFD instead of failing the write. Request input never gets this far
 * with it (the validation pipe rejects it), so this only touches text the service produced.
 */
export function toJsonb(value: unknown): string {
  return sanitizeJsonText(JSON.stringify(value));
}
