/** The UTF-16 encoding a byte order mark at the start names, or null (UTF-8, with or without its own mark). */
export function utf16Encoding(buf: Buffer): 'utf-16le' | 'utf-16be' | null {
  if (buf.length >= 2 && buf[0] === 0xff && buf[1] === 0xfe) return 'utf-16le';
  if (buf.length >= 2 && buf[0] === 0xfe && buf[1] === 0xff) return 'utf-16be';
  return null;
}
