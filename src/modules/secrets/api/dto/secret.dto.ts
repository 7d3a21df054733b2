import { ApiProperty } from '@nestjs/swagger';
import { IsNotEmpty, IsString, ValidateBy, ValidationOptions } from 'class-validator';
import { SECRET_VALUE_MAX_BYTES, SecretMetadata } from '../../domain/secret';

/** At most `max` bytes of UTF-8 (a character count would let 4-byte characters through at 4x the size). */
function MaxUtf8Bytes(max: number, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'maxUtf8Bytes',
      constraints: [max],
      validator: {
        validate: (v: unknown) => typeof v === 'string' && Buffer.byteLength(v, 'utf8') <= max,
        defaultMessage: () => `$property must be at most ${max} bytes of UTF-8`,
      },
    },
    options,
  );
}

export class PutSecretRequestDto {
  @ApiProperty({
    type: String,
    writeOnly: true,
    format: 'password',
    minLength: 1,
    example: 'crm-token-3f9a1c7e2b',
    description:
      `Write-only: the secret's value, a non-empty string of at most ${SECRET_VALUE_MAX_BYTES} bytes of UTF-8 (8 KiB). It is stored encrypted ` +
      '(AES-256-GCM under SECRETS_KEY) and never returned by any route, nor written to a log, event, audit record or idempotency record; ' +
      'only an http or mcp tool header naming `${secret:NAME}` receives it, at call time.',
  })
  @IsString()
  @IsNotEmpty()
  @MaxUtf8Bytes(SECRET_VALUE_MAX_BYTES)
  value!: string;
}

export class SecretResponseDto {
  @ApiProperty({ example: 'CRM_API_TOKEN', pattern: '^[A-Z][A-Z0-9_]{0,63}$', description: 'The name tool headers use: `${secret:CRM_API_TOKEN}`.' })
  name!: string;
  @ApiProperty({ enum: ['secret'] }) object!: 'secret';
  @ApiProperty({
    example: 1,
    description:
      '1 when the name is first set; every later PUT (a rotation) adds one. A name set again after a delete goes on counting (versions are never reused).',
  })
  version!: number;
  @ApiProperty({ format: 'date-time', description: 'When the name was set (again after a delete: when it was set again).' }) created_at!: string;
  @ApiProperty({ format: 'date-time', description: 'When the current version was written.' }) updated_at!: string;
}

export class SecretListResponseDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [SecretResponseDto] }) data!: SecretResponseDto[];
  @ApiProperty({ type: String, nullable: true, description: "The first item's name (secrets are identified by name)." }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true, description: "The last item's name: pass it as `after` for the next page." }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}

export function toSecretResponse(s: SecretMetadata): SecretResponseDto {
  return { name: s.name, object: 'secret', version: s.version, created_at: s.createdAt.toISOString(), updated_at: s.updatedAt.toISOString() };
}

export function toSecretList(items: SecretMetadata[], hasMore: boolean): SecretListResponseDto {
  const data = items.map(toSecretResponse);
  return { object: 'list', data, first_id: data[0]?.name ?? null, last_id: data[data.length - 1]?.name ?? null, has_more: hasMore };
}
