import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CurrentPrincipal } from '../../../common/auth/auth.decorators';
import { Principal } from '../../../common/auth/principal';
import { invalidRequest } from '../../../common/errors/domain-error';
import { ApiErrors } from '../../../common/errors/error.dto';
import { ApiIdempotencyKey, ApiJsonBody } from '../../../common/http/api-docs.decorators';
import { ListQueryDto, listPage } from '../../../common/http/pagination';
import type { ContentPart } from '../../agents/domain/model-provider';
import { IdempotentExecutor } from '../../idempotency/application/idempotent-executor';
import {
  CreateAutomationCommand,
  DeleteAutomationCommand,
  InvokeAutomationCommand,
  SetAutomationPausedCommand,
  UpdateAutomationCommand,
} from '../application/automation-commands';
import { GetAutomationQuery, ListAutomationInvocationsQuery, ListAutomationsQuery } from '../application/automation-queries';
import { toAutomationResponse, toInvocationResponse } from '../application/automation-views';
import {
  AutomationInvocationListResponseDto,
  AutomationInvocationResponseDto,
  AutomationListResponseDto,
  AutomationResponseDto,
  CreateAutomationRequestDto,
  toSchedule,
  toTarget,
  UPDATE_AUTOMATION_FIELDS,
  UpdateAutomationRequestDto,
} from './automation.dto';

const ABOUT =
  'Automations (CONTRACT section 17) deliver `input` to a target on a schedule: `cron` (five fields, in an IANA `timezone`) or `once` (`at`). ' +
  'Each slot fires exactly once across all nodes (an invocation per slot); a slot missed while every node was down fires once at start-up if it is younger than ' +
  'AUTOMATION_CATCHUP_MS (default 1 h), else it is recorded `skipped` (`missed`). Each invocation acts as the automation\'s creator: target `new_session` creates a ' +
  'session of `agent_id` with the input as its first run; target `session` sends the input to that session by its `default_concurrency` when it is busy ' +
  '(`reject`: the invocation `failed` with session_busy). A refused input makes the invocation `failed` and fires the webhook `automation.invocation_failed`. ' +
  'Members manage their own automations, admins every one of the tenant.';

@ApiTags('Automations')
@ApiBearerAuth('api-key')
@Controller('v1/automations')
export class AutomationsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly idempotent: IdempotentExecutor,
  ) {}

  @Post()
  @ApiOperation({
    summary: 'Create an automation',
    description:
      `${ABOUT} Idempotency-Key is required. A tenant has at most AUTOMATIONS_MAX_PER_TENANT (default 200) automations that are active or paused, ` +
      'and one owner (the key\'s subject) at most AUTOMATIONS_MAX_PER_MEMBER (default 50): one more is 409 `automation_limit_reached` ' +
      '(details `{scope: "tenant"|"member", limit}`). A cron expression that matches no date (`0 0 31 2 *`) or a `once` not in the future is 400.',
  })
  @ApiIdempotencyKey(true)
  @ApiJsonBody(CreateAutomationRequestDto, {
    cron: {
      summary: 'Every weekday at 09:00 Berlin time, a new session',
      value: {
        name: 'Morning digest',
        schedule: { type: 'cron', expression: '0 9 * * 1-5', timezone: 'Europe/Berlin' },
        target: { type: 'new_session', agent_id: 'support_agent' },
        input: { role: 'user', content: [{ type: 'text', text: 'Summarise the open tickets.' }] },
      },
    },
    once: {
      summary: 'Once, at a given time (into an existing session: target {"type":"session","session_id":"sess_..."})',
      value: {
        name: 'Follow up',
        schedule: { type: 'once', at: '2099-12-24T09:00:00.000Z' },
        target: { type: 'new_session', agent_id: 'support_agent' },
        input: { role: 'user', content: [{ type: 'text', text: 'Is order O-1001 delivered?' }] },
      },
    },
  })
  @ApiCreatedResponse({ type: AutomationResponseDto })
  @ApiErrors('invalid_request', 'idempotency_key_required', 'agent_not_found', 'session_not_found', 'automation_limit_reached', 'idempotency_conflict', 'idempotency_in_progress')
  async create(@CurrentPrincipal() p: Principal, @Body() dto: CreateAutomationRequestDto, @Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    await this.idempotent.execute(req, reply, { required: true }, async () => {
      const a = await this.commands.execute(
        new CreateAutomationCommand(p, {
          name: dto.name,
          schedule: toSchedule(dto.schedule),
          target: toTarget(dto.target),
          input: { role: 'user', content: dto.input.content as ContentPart[] },
          enabled: dto.enabled,
          metadata: dto.metadata,
        }),
      );
      return { status: 201, body: toAutomationResponse(a, null) };
    });
  }

  @Get()
  @ApiOperation({ summary: 'List automations', description: 'Members see their own, admins the tenant\'s. Default order: desc.' })
  @ApiOkResponse({ type: AutomationListResponseDto })
  @ApiErrors('invalid_request', 'invalid_cursor')
  async list(@CurrentPrincipal() p: Principal, @Query() q: ListQueryDto) {
    const { items, hasMore } = await this.queries.execute(new ListAutomationsQuery(p, { after: q.after, limit: q.limit ?? 20, order: q.order ?? 'desc' }));
    return listPage(items.map((v) => toAutomationResponse(v.automation, v.lastInvocation)), hasMore);
  }

  @Get(':id')
  @ApiOperation({ summary: 'Get an automation', description: 'With `next_run_at` and `last_invocation`.' })
  @ApiOkResponse({ type: AutomationResponseDto })
  @ApiErrors('automation_not_found')
  async get(@CurrentPrincipal() p: Principal, @Param('id') id: string) {
    const v = await this.queries.execute(new GetAutomationQuery(p, id));
    return toAutomationResponse(v.automation, v.lastInvocation);
  }

  @Post(':id')
  @ApiOperation({ summary: 'Update an automation', description: 'Only the fields given change (schedule and target keep their type). A new schedule moves `next_run_at` from now; one that never fires is 400.' })
  @ApiIdempotencyKey(false)
  @ApiJsonBody(UpdateAutomationRequestDto, { rename: { summary: 'Rename', value: { name: 'Evening digest', schedule: { type: 'cron', expression: '0 18 * * 1-5', timezone: 'Europe/Berlin' } } } })
  @ApiOkResponse({ type: AutomationResponseDto })
  @ApiErrors('invalid_request', 'automation_not_found', 'agent_not_found', 'session_not_found')
  async update(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Body() dto: UpdateAutomationRequestDto, @Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    if (UPDATE_AUTOMATION_FIELDS.every((f) => dto[f] === undefined)) {
      throw invalidRequest(`give at least one of ${UPDATE_AUTOMATION_FIELDS.join(', ')}`, [{ field: 'body', message: `must set at least one of ${UPDATE_AUTOMATION_FIELDS.join(', ')}` }]);
    }
    await this.idempotent.execute(req, reply, {}, async () => {
      const a = await this.commands.execute(
        new UpdateAutomationCommand(p, id, {
          name: dto.name,
          schedule: dto.schedule ? toSchedule(dto.schedule) : undefined,
          target: dto.target ? toTarget(dto.target) : undefined,
          input: dto.input ? { role: 'user', content: dto.input.content as ContentPart[] } : undefined,
          metadata: dto.metadata,
        }),
      );
      const v = await this.queries.execute(new GetAutomationQuery(p, a.id));
      return { status: 200, body: toAutomationResponse(v.automation, v.lastInvocation) };
    });
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete an automation', description: 'No more invocations; its invocation records go with it; the sessions and runs it started stay.' })
  @ApiNoContentResponse()
  @ApiErrors('automation_not_found')
  async remove(@CurrentPrincipal() p: Principal, @Param('id') id: string): Promise<void> {
    await this.commands.execute(new DeleteAutomationCommand(p, id));
  }

  @Post(':id/pause')
  @HttpCode(200)
  @ApiOperation({ summary: 'Pause an automation', description: 'No scheduled slot fires while paused (slots passing meanwhile are not made up later); run now still works. Pausing a paused or completed one changes nothing.' })
  @ApiIdempotencyKey(false)
  @ApiOkResponse({ type: AutomationResponseDto })
  @ApiErrors('automation_not_found')
  async pause(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    await this.setPaused(p, id, true, req, reply);
  }

  @Post(':id/resume')
  @HttpCode(200)
  @ApiOperation({ summary: 'Resume an automation', description: 'The next slot after now fires. A one-time automation whose `at` has passed (or that has fired) answers 400: update `schedule.at` first.' })
  @ApiIdempotencyKey(false)
  @ApiOkResponse({ type: AutomationResponseDto })
  @ApiErrors('invalid_request', 'automation_not_found')
  async resume(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    await this.setPaused(p, id, false, req, reply);
  }

  private async setPaused(p: Principal, id: string, paused: boolean, req: FastifyRequest, reply: FastifyReply) {
    await this.idempotent.execute(req, reply, {}, async () => {
      await this.commands.execute(new SetAutomationPausedCommand(p, id, paused));
      const v = await this.queries.execute(new GetAutomationQuery(p, id));
      return { status: 200, body: toAutomationResponse(v.automation, v.lastInvocation) };
    });
  }

  @Post(':id/invocations')
  @ApiOperation({
    summary: 'Run an automation now',
    description: 'A manual invocation (`source: manual`, no slot), answered `queued` and delivered right away by the scheduler; the schedule is not touched (also works while paused).',
  })
  @ApiIdempotencyKey(false)
  @ApiCreatedResponse({ type: AutomationInvocationResponseDto })
  @ApiErrors('automation_not_found')
  async invoke(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    await this.idempotent.execute(req, reply, {}, async () => {
      const inv = await this.commands.execute(new InvokeAutomationCommand(p, id));
      return { status: 201, body: toInvocationResponse(inv) };
    });
  }

  @Get(':id/invocations')
  @ApiOperation({ summary: "An automation's invocations", description: 'Newest first by default.' })
  @ApiOkResponse({ type: AutomationInvocationListResponseDto })
  @ApiErrors('invalid_request', 'invalid_cursor', 'automation_not_found')
  async invocations(@CurrentPrincipal() p: Principal, @Param('id') id: string, @Query() q: ListQueryDto) {
    const { items, hasMore } = await this.queries.execute(new ListAutomationInvocationsQuery(p, id, { after: q.after, limit: q.limit ?? 20, order: q.order ?? 'desc' }));
    return listPage(items.map(toInvocationResponse), hasMore);
  }
}
