import { ContentScanner, EICAR_SIGNATURE } from './content.scanner';

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]), Buffer.from('JFIF\0'), Buffer.alloc(64)]);
const GIF = Buffer.concat([Buffer.from('GIF89a'), Buffer.from([1, 0, 1, 0, 0, 0, 0]), Buffer.alloc(32)]);
const WEBP = Buffer.concat([Buffer.from('RIFF'), Buffer.from([36, 0, 0, 0]), Buffer.from('WEBPVP8 '), Buffer.alloc(40)]);
const PDF = Buffer.from('%PDF-1.7\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n');
const ZIP = Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0, 0, 0, 0, 0]), Buffer.alloc(40)]);
const ELF = Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), Buffer.alloc(64)]);
const MZ = Buffer.concat([Buffer.from('MZ'), Buffer.alloc(58), Buffer.from([0x80, 0, 0, 0]), Buffer.alloc(64), Buffer.from('PE\0\0'), Buffer.alloc(64)]);
const MACHO = Buffer.concat([Buffer.from([0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1]), Buffer.alloc(64)]);

/** Feeds the content in chunks of `size` bytes, as the blob store does. */
async function* chunks(buf: Buffer, size = 7): AsyncIterable<Buffer> {
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
}

const scanner = new ContentScanner();
const scan = (filename: string, content: Buffer | string, chunkSize?: number) => {
  const buf = typeof content === 'string' ? Buffer.from(content) : content;
  return scanner.scan({ filename, declaredType: null, sizeBytes: buf.length, content: chunks(buf, chunkSize) });
};

describe('ContentScanner', () => {
  describe('given allowed content with a matching extension, when scanned, then it is clean with the detected type', () => {
    it.each([
      ['image.png', PNG, 'image/png'],
      ['photo.jpg', JPEG, 'image/jpeg'],
      ['photo.JPEG', JPEG, 'image/jpeg'],
      ['anim.gif', GIF, 'image/gif'],
      ['pic.webp', WEBP, 'image/webp'],
      ['contract.pdf', PDF, 'application/pdf'],
      ['notes.txt', Buffer.from('plain text ✓\n'), 'text/plain'],
      ['README', Buffer.from('no extension'), 'text/plain'],
      ['doc.md', Buffer.from('# Title\n\n- item\n'), 'text/markdown'],
      ['table.csv', Buffer.from('a,b\n"x, y",2\n'), 'text/csv'],
      ['data.json', Buffer.from('{"a":[1,2,{"b":"ü"}]}'), 'application/json'],
    ])('%s', async (filename, content, type) => {
      await expect(scan(filename, content)).resolves.toEqual({ verdict: 'clean', mediaType: type });
    });
  });

  describe('given the EICAR signature, then it is rejected as malware', () => {
    it.each([
      ['alone', EICAR_SIGNATURE],
      ['inside other text, across chunk boundaries', Buffer.concat([Buffer.from('harmless prefix '), EICAR_SIGNATURE, Buffer.from(' suffix')])],
      ['inside a PNG', Buffer.concat([PNG, EICAR_SIGNATURE])],
    ])('%s', async (_name, content) => {
      await expect(scan('file.txt', content, 5)).resolves.toMatchObject({ verdict: 'rejected', reason: 'malware_detected' });
    });
  });

  describe('given an executable under any name, then it is rejected as executable', () => {
    it.each([
      ['ELF', 'cat.png', ELF],
      ['PE/MZ', 'cat.png', MZ],
      ['Mach-O', 'tool.pdf', MACHO],
      ['shebang script', 'run.txt', Buffer.from('#!/bin/sh\nrm -rf /\n')],
    ])('%s', async (_name, filename, content) => {
      await expect(scan(filename, content)).resolves.toMatchObject({ verdict: 'rejected', reason: 'executable' });
    });

    it('but text that merely starts with "MZ" is text', async () => {
      await expect(scan('names.txt', 'MZ is a postcode prefix')).resolves.toEqual({ verdict: 'clean', mediaType: 'text/plain' });
    });
  });

  describe('given content that disagrees with its extension, then it is a type mismatch', () => {
    it.each([
      ['a PNG named .pdf', 'report.pdf', PNG, 'image/png'],
      ['a PDF named .png', 'image.png', PDF, 'application/pdf'],
      ['a JPEG named .txt', 'notes.txt', JPEG, 'image/jpeg'],
      ['text named .png', 'image.png', Buffer.from('just text'), 'text/plain'],
    ])('%s', async (_name, filename, content, detected) => {
      await expect(scan(filename, content)).resolves.toMatchObject({ verdict: 'rejected', reason: 'type_mismatch', mediaType: detected });
    });
  });

  describe('given content outside the allow-list, then it is not allowed', () => {
    it.each([
      ['a zip archive', 'archive.zip', ZIP],
      ['unknown binary', 'blob.bin', Buffer.from([0, 1, 2, 3, 0xff, 0xfe, 0, 0])],
      ['invalid UTF-8', 'latin1.txt', Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a])],
      ['text with NUL', 'nul.txt', Buffer.from('a\0b')],
      ['HTML', 'page.html', Buffer.from('<html><script>alert(1)</script></html>')],
    ])('%s', async (_name, filename, content) => {
      await expect(scan(filename, content)).resolves.toMatchObject({ verdict: 'rejected', reason: 'type_not_allowed' });
    });
  });

  it('rejects JSON that does not parse and CSV with an unterminated quote', async () => {
    await expect(scan('data.json', '{"a":')).resolves.toMatchObject({ verdict: 'rejected', reason: 'invalid_content' });
    await expect(scan('t.csv', 'a,"b\n')).resolves.toMatchObject({ verdict: 'rejected', reason: 'invalid_content' });
  });

  it('rejects an empty file', async () => {
    await expect(scan('empty.txt', Buffer.alloc(0))).resolves.toMatchObject({ verdict: 'rejected', reason: 'empty_file' });
  });

  it('accepts multi-byte UTF-8 split across chunks', async () => {
    await expect(scan('u.txt', Buffer.from('ééééé ✓✓✓ 😀😀'), 1)).resolves.toEqual({ verdict: 'clean', mediaType: 'text/plain' });
  });

  describe('text with a byte order mark', () => {
    const utf16le = (t: string) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(t, 'utf16le')]);
    const utf16be = (t: string) => Buffer.from(utf16le(t).swap16());

    it.each([
      ['UTF-16LE', 'notes.txt', utf16le('Hello, world ✓ 😀\r\n'), 'text/plain'],
      ['UTF-16BE', 'notes.txt', utf16be('Hello, world ✓ 😀\r\n'), 'text/plain'],
      ['UTF-16LE markdown', 'a.md', utf16le('# Title\n'), 'text/markdown'],
      ['UTF-16LE JSON', 'a.json', utf16le('{"a": [1, 2]}'), 'application/json'],
      ['UTF-8 with BOM', 'notes.txt', Buffer.from('\ufeffHello'), 'text/plain'],
    ])('%s is text, not audio/mpeg', async (_name, filename, content, type) => {
      await expect(scan(filename, content)).resolves.toEqual({ verdict: 'clean', mediaType: type });
      await expect(scan(filename, content, 1)).resolves.toEqual({ verdict: 'clean', mediaType: type });
    });

    it('rejects what a UTF-16 mark does not make text: U+0000, lone surrogates, invalid JSON', async () => {
      await expect(scan('a.txt', utf16le('a\u0000b'))).resolves.toMatchObject({ verdict: 'rejected', reason: 'type_not_allowed' });
      const lone = Buffer.concat([utf16le('ab'), Buffer.from([0x00, 0xd8]), Buffer.from('c', 'utf16le')]);
      await expect(scan('a.txt', lone)).resolves.toMatchObject({ verdict: 'rejected' });
      await expect(scan('a.json', utf16le('{"a":'))).resolves.toMatchObject({ verdict: 'rejected', reason: 'invalid_content' });
    });
  });
});
