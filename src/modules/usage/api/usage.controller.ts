import { Body, Controller, Delete, Get, HttpCode, Put, Query } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminOnly, CurrentPrincipal } from '../../../common/auth/auth.decorators';
import { Principal } from '../../../common/auth/principal';
import { DomainError } from '../../../common/errors/domain-error';
import { ApiErrors } from '../../../common/errors/error.dto';
import { ApiJsonBody } from '../../../common/http/api-docs.decorators';
import { DeleteSpendLimitCommand, PutSpendLimitCommand } from '../application/commands/spend-limit-commands';
import { GetSpendLimitQuery, GetUsageQuery, SpendLimitView } from '../application/queries/usage-queries';
import { addAmounts } from '../domain/money';
import { windowOf } from '../domain/spend';
import { UsageRow } from '../domain/spend.repository';
import { GetUsageRequestDto, PutSpendLimitRequestDto, SpendLimitResponseDto, toSpendLimitResponse, toUsageGroup, UsageResponseDto } from './dto/usage.dto';

/** Longest span GET /admin/usage groups over (a bound on the statement's work). */
const MAX_SPAN_MS = 400 * 24 * 3_600_000;

@ApiTags('Admin: usage and spend')
@ApiBearerAuth('api-key')
@AdminOnly()
@Controller('v1/admin')
export class UsageController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @Put('spend_limit')
  @ApiOperation({
    summary: "Set the tenant's spend limit",
    description:
      'Admin only. At most `amount` USD of estimated model cost per UTC `day` or `month`. Once the window\'s spend (every model call of the tenant\'s runs, ' +
      'failed and cancelled runs included) reaches it, new runs on every surface are refused with 429 `quota_exceeded` (not retryable; ' +
      '`details.resets_at` says when the window ends). Runs already going are not stopped. Applies on every node within a second.',
  })
  @ApiJsonBody(PutSpendLimitRequestDto, { monthly: { summary: '50 USD a month', value: { amount: '50.00', window: 'month' } } })
  @ApiOkResponse({ type: SpendLimitResponseDto })
  @ApiErrors('forbidden', 'invalid_request')
  async put(@CurrentPrincipal() p: Principal, @Body() dto: PutSpendLimitRequestDto): Promise<SpendLimitResponseDto> {
    await this.commands.execute(new PutSpendLimitCommand(p, dto.amount, dto.window));
    return toSpendLimitResponse(await this.queries.execute<GetSpendLimitQuery, SpendLimitView>(new GetSpendLimitQuery(p)));
  }

  @Get('spend_limit')
  @ApiOperation({ summary: "The tenant's spend limit and what the current window has spent", description: 'Admin only. All fields null when no limit is set.' })
  @ApiOkResponse({ type: SpendLimitResponseDto })
  @ApiErrors('forbidden')
  async get(@CurrentPrincipal() p: Principal): Promise<SpendLimitResponseDto> {
    return toSpendLimitResponse(await this.queries.execute<GetSpendLimitQuery, SpendLimitView>(new GetSpendLimitQuery(p)));
  }

  @Delete('spend_limit')
  @HttpCode(204)
  @ApiOperation({ summary: "Remove the tenant's spend limit", description: 'Admin only. Idempotent: 204 whether or not a limit was set.' })
  @ApiNoContentResponse({ description: 'No limit now.' })
  @ApiErrors('forbidden')
  async remove(@CurrentPrincipal() p: Principal): Promise<void> {
    await this.commands.execute(new DeleteSpendLimitCommand(p));
  }

  @Get('usage')
  @ApiOperation({
    summary: "The tenant's model usage and estimated cost, grouped",
    description:
      'Admin only. Tokens and estimated cost (USD decimal strings) of every model call in [`from`, `to`), grouped by UTC `day`, `agent` id or `model` id, ' +
      'ordered by key. Failed and cancelled runs count what they used. At most 400 days per request.',
  })
  @ApiOkResponse({ type: UsageResponseDto })
  @ApiErrors('forbidden', 'invalid_request')
  async usage(@CurrentPrincipal() p: Principal, @Query() q: GetUsageRequestDto): Promise<UsageResponseDto> {
    const now = new Date();
    const from = q.from ? new Date(q.from) : windowOf('month', now).start;
    const to = q.to ? new Date(q.to) : now;
    if (to.getTime() < from.getTime()) throw new DomainError('invalid_request', 'to must not be before from', { errors: [{ field: 'to', message: 'must not be before from' }] });
    if (to.getTime() - from.getTime() > MAX_SPAN_MS) throw new DomainError('invalid_request', 'at most 400 days per request', { errors: [{ field: 'from', message: 'at most 400 days before to' }] });
    const groupBy = q.group_by ?? 'day';
    const rows = await this.queries.execute<GetUsageQuery, UsageRow[]>(new GetUsageQuery(p, from, to, groupBy));
    return {
      object: 'list',
      group_by: groupBy,
      from: from.toISOString(),
      to: to.toISOString(),
      data: rows.map(toUsageGroup),
      total_cost: { amount: addAmounts(...rows.map((r) => r.amount)), currency: 'USD' },
    };
  }
}
