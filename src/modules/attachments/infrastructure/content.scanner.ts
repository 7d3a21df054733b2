import { Injectable } from '@nestjs/common';
import { TextDecoder } from 'node:util';
import { extensionOf } from '../domain/filename';
import { utf16Encoding } from '../domain/text-encoding';
import { AllowedMediaType, isAllowedMediaType, ScanInput, Scanner, ScanVerdict } from '../domain/scanner';

type FileTypeModule = typeof import('file-type/core');
let fileTypeModule: Promise<FileTypeModule> | null = null;
/** `file-type` is ESM-only: loaded once with a dynamic import (its `core` entry: buffer detection, no Node-only conditions). */
function loadFileType(): Promise<FileTypeModule> {
  fileTypeModule ??= import('file-type/core');
  return fileTypeModule;
}

/** The EICAR anti-virus test signature (https://www.eicar.org), matched anywhere in the content. */
export const EICAR_SIGNATURE = Buffer.from('X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*', 'latin1');

/** Bytes `file-type` needs to see (its own default sample size). */
const HEAD_BYTES = 4100;

/** Magic numbers of executables, checked before anything else. */
const EXECUTABLE_MAGIC: Array<{ name: string; bytes: number[] }> = [
  { name: 'ELF', bytes: [0x7f, 0x45, 0x4c, 0x46] },
  { name: 'PE/MZ', bytes: [0x4d, 0x5a] },
  { name: 'Mach-O 32', bytes: [0xfe, 0xed, 0xfa, 0xce] },
  { name: 'Mach-O 64', bytes: [0xfe, 0xed, 0xfa, 0xcf] },
  { name: 'Mach-O 32 (LE)', bytes: [0xce, 0xfa, 0xed, 0xfe] },
  { name: 'Mach-O 64 (LE)', bytes: [0xcf, 0xfa, 0xed, 0xfe] },
  { name: 'Mach-O universal / Java class', bytes: [0xca, 0xfe, 0xba, 0xbe] },
  { name: 'WebAssembly', bytes: [0x00, 0x61, 0x73, 0x6d] },
  { name: 'script (shebang)', bytes: [0x23, 0x21] },
];

/** Types `file-type` reports for executables and installers. */
const EXECUTABLE_TYPES = new Set([
  'application/x-elf',
  'application/x-msdownload',
  'application/x-mach-binary',
  'application/x-executable',
  'application/vnd.microsoft.portable-executable',
  'application/java-vm',
  'application/wasm',
  'application/x-sharedlib',
  'application/x-deb',
  'application/x-rpm',
  'application/x-msi',
  'application/x-apple-diskimage',
]);

/** Which extensions each binary type may carry. */
const BINARY_EXTENSIONS: Record<string, readonly string[]> = {
  'application/pdf': ['pdf'],
  'image/png': ['png'],
  'image/jpeg': ['jpg', 'jpeg', 'jpe', 'jfif'],
  'image/gif': ['gif'],
  'image/webp': ['webp'],
};

/** Text types by extension; no extension is plain text. */
const TEXT_EXTENSIONS: Record<string, AllowedMediaType> = {
  '': 'text/plain',
  txt: 'text/plain',
  text: 'text/plain',
  log: 'text/plain',
  md: 'text/markdown',
  markdown: 'text/markdown',
  csv: 'text/csv',
  json: 'application/json',
};

/** JSON is parsed to be checked: bounded so a scan never holds more than this in memory. */
const MAX_JSON_CHECK_BYTES = 64 * 1024 * 1024;

function startsWith(buf: Buffer, bytes: number[]): boolean {
  if (buf.length < bytes.length) return false;
  return bytes.every((b, i) => buf[i] === b);
}

/**
 * The built-in scanner: one streaming pass over the content. Media type from magic bytes
 * (`file-type`), text types from content (valid UTF-8 without NUL) plus extension and a parse
 * check, the allow-list, extension/type agreement, executables and the EICAR signature.
 */
@Injectable()
export class ContentScanner extends Scanner {
  async scan(input: ScanInput): Promise<ScanVerdict> {
    const ext = extensionOf(input.filename);
    let head = Buffer.alloc(0);
    let tail = Buffer.alloc(0); // the last bytes of the previous chunk: a signature may straddle chunks
    let eicar = false;
    let hasNul = false;
    // "Decodes as text": UTF-8, or UTF-16 when the content starts with a UTF-16 byte order mark
    // (decided by the first two bytes; UTF-16 text is full of zero bytes, so there U+0000 is
    // looked for in the decoded text instead of the bytes).
    let utf8 = true;
    let utf16 = false;
    let decoder: TextDecoder | null = null;
    let first = Buffer.alloc(0);
    const wantText = ext === 'json' || ext === 'csv';
    let text = '';
    let textTooLarge = false;
    let csvInQuotes = false;
    let total = 0;

    const decode = (chunk: Buffer, flush: boolean) => {
      if (!decoder) {
        const encoding = utf16Encoding(chunk);
        utf16 = encoding !== null;
        decoder = new TextDecoder(encoding ?? 'utf-8', { fatal: true });
      }
      if (!utf16 && !hasNul && chunk.includes(0)) hasNul = true;
      if (!utf8 || hasNul) return;
      try {
        const part = flush ? decoder.decode(chunk) : decoder.decode(chunk, { stream: true });
        if (utf16 && part.includes('\u0000')) hasNul = true;
        if (wantText) {
          if (ext === 'csv') {
            for (const ch of part) if (ch === '"') csvInQuotes = !csvInQuotes;
          } else if (text.length + part.length <= MAX_JSON_CHECK_BYTES) text += part;
          else textTooLarge = true;
        }
      } catch {
        utf8 = false;
      }
    };

    for await (const chunk of input.content) {
      total += chunk.length;
      if (head.length < HEAD_BYTES) head = Buffer.concat([head, chunk.subarray(0, HEAD_BYTES - head.length)]);
      const window = tail.length ? Buffer.concat([tail, chunk]) : chunk;
      if (!eicar && window.includes(EICAR_SIGNATURE)) eicar = true;
      tail = Buffer.from(window.subarray(Math.max(0, window.length - (EICAR_SIGNATURE.length - 1))));
      if (decoder) decode(chunk, false);
      else {
        // The encoding is decided by the first two bytes.
        first = Buffer.concat([first, chunk]);
        if (first.length >= 2) decode(first, false);
      }
    }
    decode(decoder ? Buffer.alloc(0) : first, true);

    if (eicar) return { verdict: 'rejected', reason: 'malware_detected', detail: 'the EICAR test signature was found', mediaType: null };
    if (total === 0) return { verdict: 'rejected', reason: 'empty_file', detail: 'the file is empty', mediaType: null };

    // "MZ" alone is also how some text starts: a PE image always has NULs in its header.
    const exe = EXECUTABLE_MAGIC.find((m) => startsWith(head, m.bytes) && (m.name !== 'PE/MZ' || hasNul || !utf8));
    if (exe) return { verdict: 'rejected', reason: 'executable', detail: `executable content (${exe.name})`, mediaType: null };

    const { fileTypeFromBuffer } = await loadFileType();
    // UTF-16 text with its byte order mark: file-type would take FF FE for an MPEG audio frame.
    let detected = utf16 && utf8 && !hasNul ? undefined : await fileTypeFromBuffer(head);
    // file-type calls anything starting with "MZ" a PE image; real ones have NULs in the header.
    if (detected?.mime === 'application/x-msdownload' && utf8 && !hasNul) detected = undefined;
    if (detected) {
      if (EXECUTABLE_TYPES.has(detected.mime)) {
        return { verdict: 'rejected', reason: 'executable', detail: `executable content (${detected.mime})`, mediaType: detected.mime };
      }
      if (!isAllowedMediaType(detected.mime)) {
        return { verdict: 'rejected', reason: 'type_not_allowed', detail: `${detected.mime} is not an allowed type`, mediaType: detected.mime };
      }
      const allowed = BINARY_EXTENSIONS[detected.mime] ?? [];
      if (ext !== '' && !allowed.includes(ext)) {
        return {
          verdict: 'rejected',
          reason: 'type_mismatch',
          detail: `the content is ${detected.mime} but the filename ends in .${ext}`,
          mediaType: detected.mime,
        };
      }
      return { verdict: 'clean', mediaType: detected.mime };
    }

    // No magic number: text, if it decodes as UTF-8 and has no NUL.
    if (!utf8 || hasNul) {
      return { verdict: 'rejected', reason: 'type_not_allowed', detail: 'unrecognised binary content', mediaType: 'application/octet-stream' };
    }
    const textType = TEXT_EXTENSIONS[ext];
    if (!textType) {
      if (Object.values(BINARY_EXTENSIONS).some((list) => list.includes(ext))) {
        return { verdict: 'rejected', reason: 'type_mismatch', detail: `the content is text but the filename ends in .${ext}`, mediaType: 'text/plain' };
      }
      return { verdict: 'rejected', reason: 'type_not_allowed', detail: `.${ext} files are not accepted`, mediaType: 'text/plain' };
    }
    if (textType === 'application/json') {
      if (textTooLarge) return { verdict: 'rejected', reason: 'invalid_content', detail: 'JSON too large to validate', mediaType: textType };
      try {
        JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
      } catch {
        return { verdict: 'rejected', reason: 'invalid_content', detail: 'the file is not valid JSON', mediaType: textType };
      }
    }
    if (textType === 'text/csv' && csvInQuotes) {
      return { verdict: 'rejected', reason: 'invalid_content', detail: 'the CSV has an unterminated quoted field', mediaType: textType };
    }
    return { verdict: 'clean', mediaType: textType };
  }
}
