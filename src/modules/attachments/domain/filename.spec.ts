import { contentDisposition, extensionOf, FALLBACK_FILENAME, MAX_FILENAME_BYTES, sanitizeFilename } from './filename';

describe('sanitizeFilename', () => {
  it.each([
    ['../../etc/passwd.txt', 'passwd.txt'],
    ['..\\..\\windows\\system32\\cmd.txt', 'cmd.txt'],
    ['/abs/path/report.pdf', 'report.pdf'],
    ['C:evil.txt', 'evil.txt'],
    ['a\u0000b.txt', 'ab.txt'],
    ['line\nbreak\r.txt', 'linebreak.txt'],
    ['tab\tand\u007fdel.txt', 'tabanddel.txt'],
    ['invoice\u202Efdp.exe', 'invoicefdp.exe'],
    ['  spaced name.md  ', 'spaced name.md'],
    ['.hidden', 'hidden'],
    ['trailing.dots...', 'trailing.dots'],
    ['café.txt', 'café.txt'],
  ])('%j -> %j', (raw, expected) => {
    expect(sanitizeFilename(raw)).toBe(expected);
  });

  it.each([[''], ['..'], ['.'], ['/'], ['\u0000\u0001'], [null], [undefined], ['dir/']])('never empty: %j -> file', (raw) => {
    expect(sanitizeFilename(raw)).toBe(FALLBACK_FILENAME);
  });

  it('shortens to at most 255 bytes of UTF-8, keeps the extension and never splits a character', () => {
    const long = `${'é'.repeat(300)}.pdf`;
    const out = sanitizeFilename(long);
    expect(Buffer.byteLength(out, 'utf8')).toBeLessThanOrEqual(MAX_FILENAME_BYTES);
    expect(out.endsWith('.pdf')).toBe(true);
    expect(out).not.toContain('\uFFFD');
    expect(Buffer.from(out, 'utf8').toString('utf8')).toBe(out);
    const emoji = sanitizeFilename('😀'.repeat(100));
    expect(Buffer.byteLength(emoji, 'utf8')).toBeLessThanOrEqual(MAX_FILENAME_BYTES);
    expect([...emoji].every((c) => c === '😀')).toBe(true);
  });
});

describe('extensionOf', () => {
  it.each([
    ['a.PNG', 'png'],
    ['archive.tar.gz', 'gz'],
    ['README', ''],
    ['.env', ''],
    ['dot.', ''],
  ])('%s -> %j', (name, ext) => {
    expect(extensionOf(name)).toBe(ext);
  });
});

describe('contentDisposition', () => {
  it('gives an ASCII fallback and the exact UTF-8 name', () => {
    expect(contentDisposition('notes.txt')).toBe(`attachment; filename="notes.txt"; filename*=UTF-8''notes.txt`);
    expect(contentDisposition('café "x".txt')).toBe(`attachment; filename="caf_ _x_.txt"; filename*=UTF-8''caf%C3%A9%20%22x%22.txt`);
  });
});
