import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsObject, Max, Min, ValidateIf, ValidateNested } from 'class-validator';
import { SessionTtl, TTL_STRATEGIES } from '../../domain/session.aggregate';

/** Ten years: a longer TTL is no TTL. */
export const TTL_MAX_SECONDS = 10 * 365 * 86_400;

export class SessionTtlDto {
  @ApiProperty({ example: 86400, minimum: 1, maximum: TTL_MAX_SECONDS, description: 'Seconds after the last activity (runs accepted, executed, cancelled).' })
  @IsInt()
  @Min(1)
  @Max(TTL_MAX_SECONDS)
  seconds!: number;

  @ApiProperty({ enum: TTL_STRATEGIES, example: 'archive', description: '`archive` keeps the history (new runs 409 session_archived); `delete` removes the session with its messages, runs and events.' })
  @IsIn(TTL_STRATEGIES)
  strategy!: 'archive' | 'delete';
}

const TTL_DESCRIPTION =
  'Session TTL (CONTRACT section 17): `expires_at` = `last_active_at` + `seconds`; activity moves it. A sweeper on every node (every SESSION_TTL_SWEEP_MS) ' +
  'archives or deletes a session past `expires_at` that has no active run. Omitted on create: SESSION_TTL_SECONDS with `archive` (unset: never expires).';

/** The optional `ttl` of a session's create body (null: no TTL, whatever SESSION_TTL_SECONDS says). */
export function SessionTtlProperty(update = false): PropertyDecorator {
  return applyDecorators(
    ApiPropertyOptional({ type: SessionTtlDto, nullable: true, description: update ? `${TTL_DESCRIPTION} On update: null removes the TTL.` : TTL_DESCRIPTION }),
    ValidateIf((_: object, v: unknown) => v !== undefined && v !== null),
    IsObject(),
    ValidateNested(),
    Type(() => SessionTtlDto),
  );
}

export class SessionTtlResponseDto {
  @ApiProperty({ example: 86400 }) seconds!: number;
  @ApiProperty({ enum: TTL_STRATEGIES }) strategy!: 'archive' | 'delete';
}

export function toTtl(dto: SessionTtlDto | null | undefined): SessionTtl | null | undefined {
  return dto === undefined ? undefined : dto === null ? null : { seconds: dto.seconds, strategy: dto.strategy };
}
