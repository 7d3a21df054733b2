/** Media types an attachment may have once scanned (CONTRACT section 11). */
export const ALLOWED_MEDIA_TYPES = [
  'text/plain',
  'text/markdown',
  'text/csv',
  'application/json',
  'application/pdf',
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
] as const;
export type AllowedMediaType = (typeof ALLOWED_MEDIA_TYPES)[number];

export function isAllowedMediaType(t: string): t is AllowedMediaType {
  return (ALLOWED_MEDIA_TYPES as readonly string[]).includes(t);
}

/** Machine-readable `rejection_reason` values. */
export type RejectionReason =
  | 'malware_detected'
  | 'executable'
  | 'type_not_allowed'
  | 'type_mismatch'
  | 'invalid_content'
  | 'empty_file'
  | 'integrity_error'
  | 'scan_failed';

export interface ScanInput {
  /** The sanitised filename (its extension is checked against the content). */
  filename: string;
  /** The client's Content-Type of the part: only a hint. */
  declaredType: string | null;
  sizeBytes: number;
  /** The content, streamed; may be iterated once. */
  content: AsyncIterable<Buffer>;
}

export type ScanVerdict =
  | { verdict: 'clean'; mediaType: AllowedMediaType }
  | { verdict: 'rejected'; reason: RejectionReason; detail: string; mediaType: string | null };

/** Port: decides whether content may be handed to the agent. A ClamAV adapter can implement it too. */
export abstract class Scanner {
  abstract scan(input: ScanInput): Promise<ScanVerdict>;
}
