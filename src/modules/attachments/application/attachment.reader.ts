import { Injectable } from '@nestjs/common';
import { AttachmentReader } from '../../agents/domain/tool';
import { attachmentNotFound } from '../domain/attachment.aggregate';
import { AttachmentRepository } from '../domain/attachment.repository';
import { BlobStore, readAll } from '../domain/blob-store';
import { utf16Encoding } from '../domain/text-encoding';
import { TextDecoder } from 'node:util';

const TEXT_TYPES = new Set(['text/plain', 'text/markdown', 'text/csv', 'application/json']);
const BYTES_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'application/pdf']);

/** The longest prefix of `buf` of at most `max` bytes that ends on a whole UTF-8 character. */
export function utf8Prefix(buf: Buffer, max: number): { text: string; truncated: boolean } {
  if (buf.length <= max) return { text: buf.toString('utf8'), truncated: false };
  let end = Math.max(0, max);
  // Step back over continuation bytes (10xxxxxx) so no character is cut in half.
  while (end > 0 && (buf[end] & 0xc0) === 0x80) end--;
  return { text: buf.subarray(0, end).toString('utf8'), truncated: true };
}

/**
 * A text attachment's text, at most `max` bytes of its content: UTF-8, or UTF-16 when it starts
 * with a UTF-16 byte order mark (the scanner accepts both; the mark itself is not text).
 */
export function textPrefix(buf: Buffer, max: number): { text: string; truncated: boolean } {
  const encoding = utf16Encoding(buf);
  if (!encoding) return utf8Prefix(buf, max);
  const truncated = buf.length > max;
  let end = truncated ? Math.max(2, max - (max % 2)) : buf.length - (buf.length % 2);
  const unit = (i: number) => (encoding === 'utf-16le' ? buf.readUInt16LE(i) : buf.readUInt16BE(i));
  // Never end on the first half of a surrogate pair.
  if (truncated && end >= 4 && unit(end - 2) >= 0xd800 && unit(end - 2) <= 0xdbff) end -= 2;
  return { text: new TextDecoder(encoding).decode(buf.subarray(2, end)), truncated };
}

/**
 * The AttachmentReader port for `read_attachment` and the model input: the owner's own `ready`
 * attachment, content verified (size and sha256). Text types come back as text bounded by
 * `maxTextBytes` (cut on a character boundary, `truncated` set); images and PDFs as bytes.
 */
@Injectable()
export class AttachmentBlobReader extends AttachmentReader {
  constructor(
    private readonly repo: AttachmentRepository,
    private readonly blobs: BlobStore,
  ) {
    super();
  }

  async read(owner: { tenantId: string; subjectId: string }, attachmentId: string, maxTextBytes: number) {
    const a = await this.repo.findById(attachmentId);
    if (!a || a.owner.tenantId !== owner.tenantId || a.owner.subjectId !== owner.subjectId) throw attachmentNotFound(attachmentId);
    a.assertUsable();
    const s = a.snapshot();
    const meta = { attachment_id: s.id, filename: s.filename, media_type: s.mediaType, size_bytes: s.sizeBytes, sha256: s.sha256 ?? '' };
    if (!TEXT_TYPES.has(s.mediaType) && !BYTES_TYPES.has(s.mediaType)) return meta;
    const content = await readAll(this.blobs, s.storageKey, { sizeBytes: s.sizeBytes, sha256: s.sha256 ?? '' });
    if (TEXT_TYPES.has(s.mediaType)) return { ...meta, ...textPrefix(content, maxTextBytes) };
    return { ...meta, bytes: content };
  }
}
