import { ApiProperty } from '@nestjs/swagger';
import { AuditRecord, auditRecordFields } from '../../domain/audit-record';

const EXAMPLE_DATA = {
  request: {
    method: 'POST',
    url: '/v1/sessions/sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B',
    params: { id: 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' },
    query: {},
    body: { title: 'Refund for order 1042', expected_revision: 1 },
    idempotency_key: null,
  },
  response: { status: 409, error_code: 'session_conflict', idempotent_replayed: false },
};

/** One audit record: exactly the fields that are hashed, plus `object`, `prev_hash` and `hash`. */
export class AuditRecordResponseDto {
  @ApiProperty({ example: 'aud_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) id!: string;
  @ApiProperty({ enum: ['audit_record'] }) object!: 'audit_record';
  @ApiProperty({ example: 'tenant_dev' }) tenant_id!: string;
  @ApiProperty({ description: "Position in the tenant's chain: from 1, gap-free.", example: 42 }) seq!: number;
  @ApiProperty({ example: '2025-01-01T12:00:00.000Z' }) occurred_at!: string;
  @ApiProperty({ nullable: true, type: String, example: 'user_dev', description: 'For run events: the session owner the service acted for.' })
  actor_subject_id!: string | null;
  @ApiProperty({ nullable: true, type: String, enum: ['member', 'admin', 'system'], example: 'admin' }) actor_role!: string | null;
  @ApiProperty({ nullable: true, type: String, example: 'key_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B', description: 'Id of the API key (never the key).' })
  actor_key_id!: string | null;
  @ApiProperty({ example: 'POST /v1/sessions/:id', description: '`<METHOD> <route template>` or `run_event.<type>`.' }) action!: string;
  @ApiProperty({ nullable: true, type: String, example: 'session' }) resource_type!: string | null;
  @ApiProperty({ nullable: true, type: String, example: 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) resource_id!: string | null;
  @ApiProperty({ nullable: true, type: String, example: 'sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) session_id!: string | null;
  @ApiProperty({ nullable: true, type: String, example: null }) run_id!: string | null;
  @ApiProperty({ nullable: true, type: String, example: 'req_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) request_id!: string | null;
  @ApiProperty({ nullable: true, type: String, example: 'session_conflict', description: '`ok`, or the error code of a failed request.' })
  outcome!: string | null;
  @ApiProperty({ nullable: true, type: Number, example: 409, description: 'HTTP status of a request; null for run events.' }) status!: number | null;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description: 'Unredacted data: `{request, response}` for requests, `{type, sequence, session_sequence, data}` for run events.',
    example: EXAMPLE_DATA,
  })
  data!: Record<string, unknown>;
  @ApiProperty({ example: '5d41402abc4b2a76b9719d911017c592ae1f3c6a3d1e2b5f8c0a9e7d6b4c3a21', description: 'Hash of the previous record (64 zeros for seq 1).' })
  prev_hash!: string;
  @ApiProperty({
    example: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
    description:
      'hex SHA-256 of UTF-8 (prev_hash + canonical JSON of this record without object, prev_hash, hash and mac; keys sorted at every depth, ' +
      "no whitespace): anyone recomputes it (docs/audit.md, \"The canonical record\"). Records chained before macs existed (mac null, after the legacy ones): " +
      "hex HMAC-SHA256 of the same bytes under the server's AUDIT_HMAC_KEY.",
  })
  hash!: string;
  @ApiProperty({
    nullable: true,
    type: String,
    example: '3b1f5c0e7a9d2b4c6e8f0a1b3c5d7e9f1a3b5c7d9e1f3a5b7c9d1e3f5a7b9c1d',
    description: "hex HMAC-SHA256 of `hash` under the server's AUDIT_HMAC_KEY (checked by the service, not by auditors); null on records chained before macs.",
  })
  mac!: string | null;
}

export class AuditRecordListResponseDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [AuditRecordResponseDto] }) data!: AuditRecordResponseDto[];
  @ApiProperty({ nullable: true, type: String, example: 'aud_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B' }) first_id!: string | null;
  @ApiProperty({ nullable: true, type: String, example: 'aud_01JD2Z4Q8M3K7P6W9X0Y1Z2A3C' }) last_id!: string | null;
  @ApiProperty({ example: false }) has_more!: boolean;
}

export class ChainBreakDto {
  @ApiProperty({ nullable: true, type: String, example: 'aud_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B', description: 'null when the record is missing.' })
  id!: string | null;
  @ApiProperty({ example: 17, description: 'The first record that fails (for `chain_head_mismatch`: the head position).' }) seq!: number;
  @ApiProperty({
    enum: [
      'hash_mismatch',
      'mac_mismatch',
      'prev_hash_mismatch',
      'seq_gap',
      'chain_head_mismatch',
      'checkpoint_mismatch',
      'checkpoint_signature_invalid',
      'chain_start_unanchored',
    ],
    example: 'mac_mismatch',
    description:
      '`hash_mismatch`: the record was changed and its hash not recomputed; `mac_mismatch`: it was changed and rehashed without the key; ' +
      '`prev_hash_mismatch`: it does not link to the one before; `seq_gap`: a record is missing; `chain_head_mismatch`: the last record is not the head, ' +
      "or the head's tag is not the key's (tail removed, head moved back); `checkpoint_mismatch`: a signed checkpoint names another hash for this record " +
      '(the chain was recomputed); `checkpoint_signature_invalid`: the checkpoint at this record is not signed by a listed key; ' +
      '`chain_start_unanchored`: the first stored record (after a prune) does not follow a signed checkpoint.',
  })
  reason!: string;
}

export class AuditVerifyResponseDto {
  @ApiProperty({ example: true }) ok!: boolean;
  @ApiProperty({ description: 'Records verified (before the first broken one).', example: 1250 }) checked!: number;
  @ApiProperty({ type: ChainBreakDto, required: false, description: 'Only when ok is false.' }) first_broken?: ChainBreakDto;
}

export function toAuditRecordResponse(r: AuditRecord): AuditRecordResponseDto {
  const { id, ...fields } = auditRecordFields(r);
  return {
    id,
    object: 'audit_record',
    ...fields,
    prev_hash: r.prevHash,
    hash: r.hash,
    mac: r.mac,
  };
}
