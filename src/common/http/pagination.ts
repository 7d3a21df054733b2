import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { SelectQueryBuilder, ObjectLiteral } from 'typeorm';
import { DomainError } from '../errors/domain-error';

export type SortOrder = 'asc' | 'desc';

/**
 * An integer query parameter is plain decimal digits, optionally negative (`limit=5`; `limit=-1`
 * is then out of range); anything else (`0x10`, ` 5`, `1e1`, `+5`, `5.0`, a repeated parameter)
 * stays as it came and fails `@IsInt` (400), where `Number()` read `0x10` as 16 and ` 5` as 5.
 */
export function toDecimalInt({ value }: { value: unknown }): unknown {
  return typeof value === 'string' && /^-?[0-9]{1,15}$/.test(value) ? Number(value) : value;
}

/** `after`, `limit`, `order` of every collection GET (CONTRACT section 4). */
export class ListQueryDto {
  @ApiPropertyOptional({ description: 'An item id of this list (e.g. the `last_id` of the previous page): the page starts after it.' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  after?: string;

  @ApiPropertyOptional({ minimum: 1, maximum: 100, default: 20 })
  @IsOptional()
  @Transform(toDecimalInt)
  @IsInt()
  @Min(1)
  @Max(100)
  limit?: number;

  @ApiPropertyOptional({ enum: ['asc', 'desc'], description: 'Defaults per collection (sessions and runs: desc; messages: asc).' })
  @IsOptional()
  @IsIn(['asc', 'desc'])
  order?: SortOrder;
}

export interface ListPage<T> {
  object: 'list';
  data: T[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

export function listPage<T extends { id: string }>(items: T[], hasMore: boolean): ListPage<T> {
  return {
    object: 'list',
    data: items,
    first_id: items.length ? items[0].id : null,
    last_id: items.length ? items[items.length - 1].id : null,
    has_more: hasMore,
  };
}

export function invalidCursor(after: string): DomainError {
  return new DomainError('invalid_cursor', 'the after cursor does not name an item of this list', { after });
}

/**
 * Applies a keyset page on `(created_at, id)` to a query builder: reads `limit + 1` rows, never
 * everything. `cursor` is the row named by `after` (already checked to belong to this list).
 */
export async function keysetPage<E extends ObjectLiteral>(
  qb: SelectQueryBuilder<E>,
  alias: string,
  cursor: { createdAt: Date; id: string } | null,
  order: SortOrder,
  limit: number,
): Promise<{ rows: E[]; hasMore: boolean }> {
  const dir = order === 'asc' ? 'ASC' : 'DESC';
  const op = order === 'asc' ? '>' : '<';
  if (cursor) {
    qb.andWhere(`(${alias}.created_at, ${alias}.id) ${op} (:cursorAt, :cursorId)`, { cursorAt: cursor.createdAt, cursorId: cursor.id });
  }
  qb.orderBy(`${alias}.created_at`, dir).addOrderBy(`${alias}.id`, dir).limit(limit + 1);
  const rows = await qb.getMany();
  const hasMore = rows.length > limit;
  return { rows: hasMore ? rows.slice(0, limit) : rows, hasMore };
}

export function iso(d: Date | null | undefined): string | null {
  return d ? d.toISOString() : null;
}
