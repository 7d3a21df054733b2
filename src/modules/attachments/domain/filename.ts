/** Longest filename we keep, in UTF-8 bytes. */
export const MAX_FILENAME_BYTES = 255;
export const FALLBACK_FILENAME = 'file';

// C0 and C1 control characters, DEL, and the bidirectional overrides that can disguise an
// extension ("invoice\u202Efdp.exe" shows as "invoiceexe.pdf").
// eslint-disable-next-line no-control-regex
const UNSAFE_CHARS = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g;

/**
 * Makes a client-supplied filename safe to store and to echo in Content-Disposition: no path
 * parts, no control characters or NUL, no leading dots, at most 255 bytes of UTF-8 (the
 * extension kept when shortening), never empty.
 */
export function sanitizeFilename(raw: string | null | undefined): string {
  let name = (raw ?? '').normalize('NFC');
  // Path parts of any platform: keep the last segment only.
  const segments = name.split(/[\\/]/);
  name = segments[segments.length - 1] ?? '';
  name = name.replace(UNSAFE_CHARS, '');
  // Windows drive prefixes ("C:evil.txt") and trailing dots/spaces that some systems drop.
  name = name.replace(/^[A-Za-z]:/, '');
  name = name.trim().replace(/^[.\s]+/, '').replace(/[.\s]+$/, '');
  if (name === '') return FALLBACK_FILENAME;
  return truncateUtf8(name, MAX_FILENAME_BYTES);
}

/** The lowercase extension without the dot ('' when none). */
export function extensionOf(filename: string): string {
  const dot = filename.lastIndexOf('.');
  if (dot <= 0 || dot === filename.length - 1) return '';
  return filename.slice(dot + 1).toLowerCase();
}

function truncateUtf8(name: string, maxBytes: number): string {
  if (Buffer.byteLength(name, 'utf8') <= maxBytes) return name;
  const ext = extensionOf(name);
  const suffix = ext && Buffer.byteLength(ext, 'utf8') <= 16 ? `.${name.slice(name.length - ext.length)}` : '';
  const stem = suffix ? name.slice(0, name.length - suffix.length) : name;
  const budget = maxBytes - Buffer.byteLength(suffix, 'utf8');
  let out = '';
  let used = 0;
  // Whole code points only: never split a character.
  for (const ch of stem) {
    const n = Buffer.byteLength(ch, 'utf8');
    if (used + n > budget) break;
    out += ch;
    used += n;
  }
  return (out.replace(/[.\s]+$/, '') || FALLBACK_FILENAME) + suffix;
}

/** RFC 6266 / 5987 header value: an ASCII fallback plus the exact UTF-8 name. */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}
