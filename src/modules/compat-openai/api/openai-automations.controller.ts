import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Req, Res, UseFilters } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CurrentPrincipal } from '../../../common/auth/auth.decorators';
import { Principal } from '../../../common/auth/principal';
import { ApiIdempotencyKey, ApiJsonBody } from '../../../common/http/api-docs.decorators';
import {
  CreateAutomationCommand,
  DeleteAutomationCommand,
  InvokeAutomationCommand,
  ScheduleFields,
  SetAutomationPausedCommand,
  UpdateAutomationCommand,
} from '../../automations/application/automation-commands';
import { GetAutomationInvocationQuery, GetAutomationQuery, ListAutomationInvocationsQuery, ListAutomationsQuery } from '../../automations/application/automation-queries';
import type { AutomationSchedule } from '../../automations/domain/automation';
import { IdempotentExecutor } from '../../idempotency/application/idempotent-executor';
import { parseAutomationTarget, toOpenAiAutomation, toOpenAiInvocation } from '../domain/openai-automations';
import { InputProblem } from '../domain/input-events';
import { OpenAiAutomationCreateDto, OpenAiAutomationListQueryDto, OpenAiAutomationUpdateDto } from './dto/openai-automations.dto';
import { OpenAiListQueryDto } from './dto/openai.dto';
import { OpenAiErrorFilter } from './openai-error.filter';

/** Error fields named as the SDK's params (top level). */
const FIELDS: ScheduleFields = { expression: 'expression', timezone: 'timezone', at: 'run_at' };

const page = <T extends { id: string }>(data: T[], hasMore: boolean) => ({ object: 'list' as const, data, has_more: hasMore, first_id: data[0]?.id ?? null, last_id: data[data.length - 1]?.id ?? null });

/**
 * `client.beta.agents.automations` (and `.invocations`) of the official `openai` SDK (7.55) over
 * the native automations (CONTRACT sections 15 and 17): the same commands and queries, the SDK's
 * shapes (Unix seconds, `periodic`/`once`, `new_session`/`existing_session`).
 */
@ApiTags('OpenAI Agents API (beta)')
@ApiBearerAuth('api-key')
@UseFilters(OpenAiErrorFilter)
@Controller('openai/v1/agents/automations')
export class OpenAiAutomationsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly idempotent: IdempotentExecutor,
  ) {}

  @Post()
  @ApiOperation({
    summary: 'Create an automation',
    description:
      '`type: "periodic"` with `expression` (five-field cron) and `timezone` (IANA), or `type: "once"` with `run_at` (future Unix seconds). Target `new_session` ' +
      '(`agent_id`, `environment: {"type":"none"}`, `input` of user messages) or `existing_session` (`session_id`, `instructions`: delivered as user input). ' +
      'An inline `agent` or `vault_ids` are 400 naming the param. Same scheduling as `/v1/automations`. `Idempotency-Key` is honoured.',
  })
  @ApiIdempotencyKey(false)
  @ApiJsonBody(OpenAiAutomationCreateDto, {
    periodic: {
      summary: 'Every weekday at 09:00 Berlin time',
      value: {
        type: 'periodic',
        name: 'Morning digest',
        expression: '0 9 * * 1-5',
        timezone: 'Europe/Berlin',
        target: { type: 'new_session', agent_id: 'support_agent', environment: { type: 'none' }, input: [{ role: 'user', content: [{ type: 'input_text', text: 'Summarise the open tickets.' }] }] },
      },
    },
  })
  async create(@CurrentPrincipal() p: Principal, @Body() dto: OpenAiAutomationCreateDto, @Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    const schedule = this.schedule(dto.type, dto);
    const { target, content } = parseAutomationTarget(dto.target);
    await this.idempotent.execute(req, reply, {}, async () => {
      const a = await this.commands.execute(new CreateAutomationCommand(p, { name: dto.name, schedule, target, input: { role: 'user', content }, metadata: checkMetadata(dto.metadata) }, FIELDS));
      return { status: 200, body: toOpenAiAutomation(a) };
    });
  }

  private schedule(type: 'periodic' | 'once', dto: { expression?: string; timezone?: string; run_at?: number }): AutomationSchedule {
    if (type === 'periodic') {
      if (dto.run_at !== undefined) throw new InputProblem('run_at is for type "once"', 'run_at');
      if (!dto.expression) throw new InputProblem('expression is required for a periodic automation', 'expression');
      if (!dto.timezone) throw new InputProblem('timezone is required for a periodic automation', 'timezone');
      return { type: 'cron', expression: dto.expression, timezone: dto.timezone };
    }
    if (dto.expression !== undefined || dto.timezone !== undefined) throw new InputProblem('expression and timezone are for type "periodic"', dto.expression !== undefined ? 'expression' : 'timezone');
    if (dto.run_at === undefined) throw new InputProblem('run_at is required for a one-time automation', 'run_at');
    return { type: 'once', at: new Date(dto.run_at * 1000) };
  }

  @Get()
  @ApiOperation({ summary: 'List automations (newest first by default; `session_id` filters existing-session targets)' })
  async list(@CurrentPrincipal() p: Principal, @Query() q: OpenAiAutomationListQueryDto) {
    const { items, hasMore } = await this.queries.execute(new ListAutomationsQuery(p, { after: q.after, limit: q.limit ?? 20, order: q.order ?? 'desc', sessionId: q.session_id }));
    return page(
      items.map((v) => toOpenAiAutomation(v.automation)),
      hasMore,
    );
  }

  @Get(':id')
  @ApiOperation({ summary: 'Retrieve an automation' })
  async get(@CurrentPrincipal() p: Principal, @Param('id') id: string) {
    return toOpenAiAutomation((await this.queries.execute(new GetAutomationQuery(p, id))).automation);
  }

  @Post(':id')
  @ApiOperation({ summary: 'Update an automation', description: 'Supplied fields only; `target` and `metadata` replace the whole field; `expression`/`timezone` for periodic, `run_at` for once.' })
  @ApiIdempotencyKey(false)
  @ApiJsonBody(OpenAiAutomationUpdateDto, { rename: { summary: 'Rename', value: { name: 'Evening digest' } } })
  async update(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Body() dto: OpenAiAutomationUpdateDto, @Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    const parsed = dto.target !== undefined ? parseAutomationTarget(dto.target) : undefined;
    await this.idempotent.execute(req, reply, {}, async () => {
      const current = (await this.queries.execute(new GetAutomationQuery(p, id))).automation;
      let schedule: AutomationSchedule | undefined;
      if (current.schedule.type === 'cron') {
        if (dto.run_at !== undefined) throw new InputProblem('run_at is only accepted for one-time automations', 'run_at');
        if (dto.expression !== undefined || dto.timezone !== undefined) schedule = { type: 'cron', expression: dto.expression ?? current.schedule.expression, timezone: dto.timezone ?? current.schedule.timezone };
      } else {
        if (dto.expression !== undefined || dto.timezone !== undefined) throw new InputProblem('expression and timezone are only accepted for periodic automations', dto.expression !== undefined ? 'expression' : 'timezone');
        if (dto.run_at !== undefined) schedule = { type: 'once', at: new Date(dto.run_at * 1000) };
      }
      const a = await this.commands.execute(
        new UpdateAutomationCommand(
          p,
          id,
          { name: dto.name, schedule, target: parsed?.target, input: parsed ? { role: 'user', content: parsed.content } : undefined, metadata: checkMetadata(dto.metadata) },
          FIELDS,
        ),
      );
      return { status: 200, body: toOpenAiAutomation(a) };
    });
  }

  @Delete(':id')
  @ApiOperation({ summary: 'Delete an automation (its target session stays)' })
  async remove(@CurrentPrincipal() p: Principal, @Param('id') id: string) {
    await this.commands.execute(new DeleteAutomationCommand(p, id));
    return { id, object: 'agent.automation.deleted', deleted: true };
  }

  @Post(':id/pause')
  @HttpCode(200)
  @ApiOperation({ summary: 'Pause scheduled delivery' })
  async pause(@CurrentPrincipal() p: Principal, @Param('id') id: string) {
    return toOpenAiAutomation(await this.commands.execute(new SetAutomationPausedCommand(p, id, true)));
  }

  @Post(':id/resume')
  @HttpCode(200)
  @ApiOperation({ summary: 'Resume scheduled delivery (a one-time automation whose run_at has passed needs a future run_at first: 400)' })
  async resume(@CurrentPrincipal() p: Principal, @Param('id') id: string) {
    return toOpenAiAutomation(await this.commands.execute(new SetAutomationPausedCommand(p, id, false)));
  }

  @Post(':id/invocations')
  @ApiOperation({ summary: 'Run now: a manual invocation, answered `queued` and delivered at once (the schedule is not touched)' })
  @ApiIdempotencyKey(false)
  async invoke(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    await this.idempotent.execute(req, reply, {}, async () => {
      const inv = await this.commands.execute(new InvokeAutomationCommand(p, id));
      const a = (await this.queries.execute(new GetAutomationQuery(p, id))).automation;
      return { status: 200, body: toOpenAiInvocation(inv, a) };
    });
  }

  @Get(':id/invocations')
  @ApiOperation({ summary: "An automation's invocations (newest first by default); status `completed` = its session/run was created" })
  async invocations(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Query() q: OpenAiListQueryDto) {
    const { items, hasMore } = await this.queries.execute(new ListAutomationInvocationsQuery(p, id, { after: q.after, limit: q.limit ?? 20, order: q.order ?? 'desc' }));
    const a = (await this.queries.execute(new GetAutomationQuery(p, id))).automation;
    return page(
      items.map((i) => toOpenAiInvocation(i, a)),
      hasMore,
    );
  }

  @Get(':id/invocations/:invocationId')
  @ApiOperation({ summary: 'Retrieve an invocation' })
  async invocation(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Param('invocationId') invocationId: string) {
    const inv = await this.queries.execute(new GetAutomationInvocationQuery(p, id, invocationId));
    const a = (await this.queries.execute(new GetAutomationQuery(p, id))).automation;
    return toOpenAiInvocation(inv, a);
  }
}

function checkMetadata(m: Record<string, string> | null | undefined): Record<string, string> | undefined {
  if (m === undefined || m === null) return undefined;
  const entries = Object.entries(m);
  if (entries.length > 16) throw new InputProblem('metadata: at most 16 keys', 'metadata');
  for (const [k, v] of entries) {
    if (typeof v !== 'string' || k.length > 64 || v.length > 512) throw new InputProblem('metadata: string values (keys up to 64, values up to 512 characters)', `metadata.${k}`);
  }
  return m;
}
