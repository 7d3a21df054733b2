import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsISO8601, IsOptional, Matches } from 'class-validator';
import { SpendLimitView } from '../../application/queries/usage-queries';
import { SPEND_WINDOWS, SpendWindow } from '../../domain/spend';
import { USAGE_GROUPS, UsageGroup, UsageRow } from '../../domain/spend.repository';

const AMOUNT_PATTERN = /^\d{1,12}(\.\d{1,12})?$/;

export class PutSpendLimitRequestDto {
  @ApiProperty({
    example: '50.00',
    pattern: AMOUNT_PATTERN.source,
    description: 'USD as a decimal string (at most 12 digits each side of the point). New runs are refused with 429 `quota_exceeded` once the window\'s spend reaches it.',
  })
  @Matches(AMOUNT_PATTERN, { message: 'amount must be a decimal string such as "50.00" (USD)' })
  amount!: string;

  @ApiProperty({ enum: SPEND_WINDOWS, example: 'month', description: 'The calendar window the spend is counted in (UTC): `day` or `month`.' })
  @IsIn(SPEND_WINDOWS)
  window!: SpendWindow;
}

class MoneyDto {
  @ApiProperty({ example: '12.5', description: 'USD, a decimal string.' }) amount!: string;
  @ApiProperty({ enum: ['USD'], example: 'USD' }) currency!: 'USD';
}

export class SpendLimitResponseDto {
  @ApiProperty({ enum: ['spend_limit'], example: 'spend_limit' }) object!: 'spend_limit';
  @ApiProperty({ type: MoneyDto, nullable: true, description: 'The limit; null when none is set.' }) limit!: MoneyDto | null;
  @ApiProperty({ enum: SPEND_WINDOWS, nullable: true, example: 'month' }) window!: SpendWindow | null;
  @ApiProperty({ type: MoneyDto, nullable: true, description: 'Spent in the current window (model calls of all runs, failed and cancelled ones included).' }) spent!: MoneyDto | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'When the current window ends (UTC midnight / the first of the next month).' })
  resets_at!: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) updated_at!: string | null;
}

export function toSpendLimitResponse(v: SpendLimitView): SpendLimitResponseDto {
  const usd = (amount: string) => ({ amount, currency: 'USD' as const });
  return {
    object: 'spend_limit',
    limit: v.limit ? usd(v.limit.amount) : null,
    window: v.limit?.window ?? null,
    spent: v.spent !== null ? usd(v.spent) : null,
    resets_at: v.resetsAt?.toISOString() ?? null,
    updated_at: v.limit?.updatedAt.toISOString() ?? null,
  };
}

export class GetUsageRequestDto {
  @ApiPropertyOptional({ description: 'Start (inclusive), ISO 8601; default: the first of the current month (UTC).' })
  @IsOptional()
  @IsISO8601({ strict: true })
  from?: string;

  @ApiPropertyOptional({ description: 'End (exclusive), ISO 8601; default: now.' })
  @IsOptional()
  @IsISO8601({ strict: true })
  to?: string;

  @ApiPropertyOptional({ enum: USAGE_GROUPS, description: 'Group by UTC `day` (default), `agent` id or `model` id.' })
  @IsOptional()
  @IsIn(USAGE_GROUPS)
  group_by?: UsageGroup;
}

class UsageGroupDto {
  @ApiProperty({ example: '2026-12-02', description: 'The day (`YYYY-MM-DD`, UTC), agent id or model id of the group.' }) key!: string;
  @ApiProperty({ example: 3 }) runs!: number;
  @ApiProperty({ example: 7 }) model_calls!: number;
  @ApiProperty({ example: 5200 }) input_tokens!: number;
  @ApiProperty({ example: 200 }) cached_input_tokens!: number;
  @ApiProperty({ example: 90 }) output_tokens!: number;
  @ApiProperty({ example: 10 }) reasoning_tokens!: number;
  @ApiProperty({ type: MoneyDto }) estimated_cost!: MoneyDto;
}

export class UsageResponseDto {
  @ApiProperty({ enum: ['list'], example: 'list' }) object!: 'list';
  @ApiProperty({ enum: USAGE_GROUPS, example: 'day' }) group_by!: UsageGroup;
  @ApiProperty({ type: String, format: 'date-time' }) from!: string;
  @ApiProperty({ type: String, format: 'date-time' }) to!: string;
  @ApiProperty({ type: [UsageGroupDto] }) data!: UsageGroupDto[];
  @ApiProperty({ type: MoneyDto, description: 'The sum over all groups.' }) total_cost!: MoneyDto;
}

export function toUsageGroup(r: UsageRow): UsageGroupDto {
  return {
    key: r.key,
    runs: r.runs,
    model_calls: r.modelCalls,
    input_tokens: r.inputTokens,
    cached_input_tokens: r.cachedInputTokens,
    output_tokens: r.outputTokens,
    reasoning_tokens: r.reasoningTokens,
    estimated_cost: { amount: r.amount, currency: 'USD' },
  };
}
