import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsIn, IsISO8601, IsOptional } from 'class-validator';
import { AuditCheckpoint, AuditPublicKey } from '../../domain/audit-checkpoint';

/** `GET /v1/admin/audit/export` parameters (no `example`s: Swagger UI would pre-fill them). */
export class ExportAuditRequestDto {
  @ApiPropertyOptional({ description: 'From the first record with occurred_at >= from (RFC 3339), e.g. `2025-01-01T00:00:00.000Z`. Default: the first stored record.' })
  @IsOptional()
  @IsISO8601({ strict: true })
  from?: string;

  @ApiPropertyOptional({
    description:
      'To the last record with occurred_at < to (RFC 3339). Default: the chain head, which is signed first (so the whole export is covered by a checkpoint).',
  })
  @IsOptional()
  @IsISO8601({ strict: true })
  to?: string;

  @ApiPropertyOptional({ enum: ['ndjson', 'csv'], default: 'ndjson', description: '`ndjson` (verifiable: `agent-api audit verify`) or `csv` (for SIEMs and spreadsheets).' })
  @IsOptional()
  @IsIn(['ndjson', 'csv'])
  format?: 'ndjson' | 'csv';
}

export class AuditCheckpointDto {
  @ApiProperty({ enum: ['audit_checkpoint'] }) object!: 'audit_checkpoint';
  @ApiProperty({ example: 'tenant_dev' }) tenant_id!: string;
  @ApiProperty({ example: 3000, description: 'The signed position: the chain head at signing time.' }) seq!: number;
  @ApiProperty({ example: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08', description: 'The hash of record `seq`.' }) hash!: string;
  @ApiProperty({ example: '2025-01-01T12:00:00.000Z', description: 'When it was signed.' }) at!: string;
  @ApiProperty({ example: '1f0e2d3c4b5a6978', description: 'The signing key (`GET /v1/admin/audit/public-key`).' }) key_id!: string;
  @ApiProperty({ enum: ['ed25519'] }) algorithm!: 'ed25519';
  @ApiProperty({
    example: 'mP3bq0...base64...==',
    description: 'base64 Ed25519 signature over the UTF-8 canonical JSON `{"at":...,"hash":...,"seq":...,"tenant_id":...}` (keys sorted, no whitespace).',
  })
  signature!: string;
}

export function toCheckpointDto(c: AuditCheckpoint): AuditCheckpointDto {
  return { object: 'audit_checkpoint', tenant_id: c.tenantId, seq: c.seq, hash: c.hash, at: c.at.toISOString(), key_id: c.keyId, algorithm: 'ed25519', signature: c.signature };
}

export class AuditPublicKeyDto {
  @ApiProperty({ example: '1f0e2d3c4b5a6978', description: 'First 16 hex digits of SHA-256 over the key\'s SubjectPublicKeyInfo (DER).' }) key_id!: string;
  @ApiProperty({ enum: ['ed25519'] }) algorithm!: 'ed25519';
  @ApiProperty({ example: '-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA...\n-----END PUBLIC KEY-----\n', description: 'SPKI PEM: save it as key.pem for `agent-api audit verify`.' })
  public_key_pem!: string;
  @ApiProperty({ example: '2025-01-01T00:00:00.000Z', description: 'When a node first signed with it.' }) created_at!: string;
  @ApiProperty({ example: true, description: 'The key this node signs with now; the others signed older checkpoints (rotation keeps them listed).' })
  current!: boolean;
}

export class AuditPublicKeysResponseDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ example: '1f0e2d3c4b5a6978' }) current_key_id!: string;
  @ApiProperty({ type: [AuditPublicKeyDto] }) data!: AuditPublicKeyDto[];
}

export function toPublicKeyDto(k: AuditPublicKey, currentKeyId: string): AuditPublicKeyDto {
  return { key_id: k.keyId, algorithm: 'ed25519', public_key_pem: k.publicKeyPem, created_at: k.createdAt.toISOString(), current: k.keyId === currentKeyId };
}

export class LegalHoldRequestDto {
  @ApiProperty({ example: true, description: 'true: the tenant\'s audit records are not pruned (AUDIT_RETENTION_DAYS) until it is set to false.' })
  @IsBoolean()
  enabled!: boolean;
}

export class LegalHoldResponseDto {
  @ApiProperty({ enum: ['audit_legal_hold'] }) object!: 'audit_legal_hold';
  @ApiProperty({ example: true }) enabled!: boolean;
  @ApiProperty({ nullable: true, type: String, example: '2025-01-01T12:00:00.000Z' }) updated_at!: string | null;
  @ApiProperty({ nullable: true, type: String, example: 'admin_a1', description: 'The subject that set it.' }) updated_by!: string | null;
}

export function toLegalHoldDto(h: { enabled: boolean; updatedAt: Date | null; updatedBy: string | null }): LegalHoldResponseDto {
  return { object: 'audit_legal_hold', enabled: h.enabled, updated_at: h.updatedAt?.toISOString() ?? null, updated_by: h.updatedBy };
}

export class AuditStatusResponseDto {
  @ApiProperty({ enum: ['audit_status'] }) object!: 'audit_status';
  @ApiProperty({ type: AuditCheckpointDto, nullable: true, description: 'The latest signed checkpoint (null before the first).' })
  latest_checkpoint!: AuditCheckpointDto | null;
  @ApiProperty({ nullable: true, type: Number, example: 1, description: 'The first stored seq (above 1 after a prune); null when empty.' }) first_seq!: number | null;
  @ApiProperty({ example: 3012, description: 'The chain head (0 before the first record).' }) last_seq!: number;
  @ApiProperty({ example: 0, description: 'AUDIT_RETENTION_DAYS (0: records are kept forever).' }) retention_days!: number;
  @ApiProperty({ type: LegalHoldResponseDto }) legal_hold!: LegalHoldResponseDto;
}
