/**
 * The one text rule for everything that reaches a text or jsonb column: PostgreSQL cannot hold
 * U+0000, and jsonb refuses lone UTF-16 surrogates (`"\ud800"`: "unsupported Unicode escape
 * sequence"), which JavaScript strings can carry (JSON.parse of `"\ud800"`, a model stream, a
 * slice through an emoji). Both are "unsafe text".
 *
 * - Client input carrying it is rejected (400 `invalid_request`, `findUnsafeText` in the
 *   validation pipe): what a 2xx accepted is stored exactly as sent.
 * - Text the service produces from untrusted sources (model replies, tool results) is cleaned
 *   (U+FFFD) where it enters the run (`sanitizeText`, `sanitizeJson`, `TextDeltaSanitizer`), and
 *   every jsonb parameter is serialised by `toJsonb` (common/database/jsonb.ts), which applies the
 *   same replacement as a last line of defence, so no write can fail on it.
 */

/** U+0000, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one. */
const UNSAFE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const UNSAFE_ALL = new RegExp(UNSAFE.source, 'g');

/** True when `s` holds U+0000 or a lone surrogate. */
export function isUnsafeText(s: string): boolean {
  return UNSAFE.test(s);
}

/** Replaces U+0000 and lone surrogates by U+FFFD; any other string is returned as is. */
export function sanitizeText(s: string): string {
  return UNSAFE.test(s) ? s.replace(UNSAFE_ALL, '\uFFFD') : s;
}

/** Where a JSON-like value holds unsafe text, and what is wrong there. */
export interface UnsafeTextHit {
  /** `input.content[0].text`; `body` for the value itself; a key names itself. */
  field: string;
  problem: 'must not contain U+0000' | 'must not contain a lone UTF-16 surrogate';
}

function hit(field: string, s: string): UnsafeTextHit {
  return { field, problem: s.includes('\u0000') ? 'must not contain U+0000' : 'must not contain a lone UTF-16 surrogate' };
}

/** The first string (value or key) of a JSON-like value that is unsafe text, or null. */
export function findUnsafeText(value: unknown, path = ''): UnsafeTextHit | null {
  if (typeof value === 'string') return UNSAFE.test(value) ? hit(path || 'body', value) : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findUnsafeText(value[i], `${path}[${i}]`);
      if (found) return found;
    }
    return null;
  }
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      const p = path ? `${path}.${k}` : k;
      if (UNSAFE.test(k)) return hit(p, k);
      const found = findUnsafeText(v, p);
      if (found) return found;
    }
  }
  return null;
}

/**
 * In JSON text (as JSON.stringify writes it), the escapes that stand for unsafe text: `\u0000`
 * and any surrogate escape. JSON.stringify writes a valid surrogate pair as the characters
 * themselves and escapes only lone surrogates, so an escaped surrogate is always a lone one. The
 * lookbehind skips escaped backslashes (`\\ud800` is the text "\ud800", not an escape).
 */
const UNSAFE_JSON_ESCAPE = /(?<!\\)((?:\\\\)*)\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})/g;

/** JSON text with every unsafe-text escape replaced by `\ufffd`. Linear, no recursion: any depth. */
export function sanitizeJsonText(json: string): string {
  if (!json.includes('\\u')) return json;
  return json.replace(UNSAFE_JSON_ESCAPE, '$1\\ufffd');
}

/** A JSON-like value with unsafe text replaced by U+FFFD in every string and key (a copy only if something changed). */
export function sanitizeJson<T>(value: T): T {
  if (typeof value === 'string') return sanitizeText(value) as T;
  if (value === null || typeof value !== 'object') return value;
  const json = JSON.stringify(value);
  if (json === undefined) return value;
  const clean = sanitizeJsonText(json);
  return clean === json ? value : (JSON.parse(clean) as T);
}

/**
 * Cleans a text stream delta by delta without breaking what is valid across deltas: a delta
 * that ends in a high surrogate keeps it back until the next delta shows whether its low half
 * follows (an emoji split by a chunk boundary stays one emoji). The concatenation of what
 * `push` and `end` return is `sanitizeText` of the whole text.
 */
export class TextDeltaSanitizer {
  private held = '';

  push(delta: string): string {
    let s = this.held + delta;
    this.held = '';
    const last = s.charCodeAt(s.length - 1);
    if (last >= 0xd800 && last <= 0xdbff) {
      this.held = s.slice(-1);
      s = s.slice(0, -1);
    }
    return sanitizeText(s);
  }

  /** What is still held back (a lone high surrogate at the very end becomes U+FFFD). */
  end(): string {
    const s = this.held;
    this.held = '';
    return sanitizeText(s);
  }
}
