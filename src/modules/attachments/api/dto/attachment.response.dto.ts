import { ApiProperty } from '@nestjs/swagger';
import { iso } from '../../../../common/http/pagination';
import { AttachmentProps } from '../../domain/attachment.aggregate';
import { ALLOWED_MEDIA_TYPES } from '../../domain/scanner';

/** The statuses a client can see (an upload becomes visible once it is `scanning`). */
const VISIBLE_STATUSES = ['uploading', 'uploaded', 'scanning', 'ready', 'rejected', 'failed', 'expired'];

export class AttachmentResponseDto {
  @ApiProperty({ example: 'att_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) id!: string;
  @ApiProperty({ enum: ['attachment'] }) object!: 'attachment';
  @ApiProperty({ example: 'contract.pdf', description: 'The client filename, sanitised: no path parts, control characters or NUL, at most 255 bytes of UTF-8.' })
  filename!: string;
  @ApiProperty({
    example: 'application/pdf',
    description: `The client's Content-Type (a hint) until the scan, then the type detected from the content. Accepted types: ${ALLOWED_MEDIA_TYPES.join(', ')}.`,
  })
  media_type!: string;
  @ApiProperty({ example: 248193 }) size_bytes!: number;
  @ApiProperty({ type: String, nullable: true, example: '8e6f0c4a3b1d2e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7', description: 'Lowercase hex SHA-256 of the content.' })
  sha256!: string | null;
  @ApiProperty({ enum: VISIBLE_STATUSES, example: 'scanning', description: 'uploading -> uploaded -> scanning -> ready | rejected; uploading -> failed; ready -> expired | deleted.' })
  status!: string;
  @ApiProperty({ enum: ['agent_input'], example: 'agent_input' }) purpose!: string;
  @ApiProperty({
    type: String,
    nullable: true,
    example: null,
    description:
      'Why the scan rejected it: `malware_detected`, `executable`, `type_not_allowed`, `type_mismatch`, `invalid_content`, `empty_file`, `integrity_error`, `scan_failed` (or `upload_incomplete` for `failed`).',
  })
  rejection_reason!: string | null;
  @ApiProperty({ example: '2026-12-07T09:00:00.000Z', description: 'A ready attachment becomes `expired` then (ATTACHMENT_TTL_HOURS after upload).' })
  expires_at!: string;
  @ApiProperty({ example: '2026-11-30T09:00:00.000Z' }) created_at!: string;
}

export function toAttachmentResponse(a: Readonly<AttachmentProps>): AttachmentResponseDto {
  return {
    id: a.id,
    object: 'attachment',
    filename: a.filename,
    media_type: a.mediaType,
    size_bytes: a.sizeBytes,
    sha256: a.sha256,
    status: a.status,
    purpose: a.purpose,
    rejection_reason: a.rejectionReason,
    expires_at: iso(a.expiresAt)!,
    created_at: iso(a.createdAt)!,
  };
}
