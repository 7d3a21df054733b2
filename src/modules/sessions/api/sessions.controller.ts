import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CurrentPrincipal } from '../../../common/auth/auth.decorators';
import { Principal } from '../../../common/auth/principal';
import { ApiErrors } from '../../../common/errors/error.dto';
import { ApiIdempotencyKey, ApiJsonBody } from '../../../common/http/api-docs.decorators';
import { listPage, ListQueryDto } from '../../../common/http/pagination';
import { IdempotentExecutor } from '../../idempotency/application/idempotent-executor';
import { ArchiveSessionCommand } from '../application/commands/archive-session/archive-session.command';
import { CreateSessionCommand } from '../application/commands/create-session/create-session.command';
import { DeleteSessionCommand } from '../application/commands/delete-session/delete-session.command';
import { UpdateSessionCommand } from '../application/commands/update-session/update-session.command';
import { ListSubagentsQuery } from '../application/queries/list-subagents/list-subagents.query';
import { GetSessionQuery } from '../application/queries/get-session/get-session.query';
import { ListSessionsQuery } from '../application/queries/list-sessions/list-sessions.query';
import { SessionWorkStatusQuery } from '../application/queries/session-work-status/session-work-status.query';
import { ListSessionsQueryDto } from './dto/list-sessions.request.dto';
import type { SessionProps } from '../domain/session.aggregate';
import { CreateSessionRequestDto } from './dto/create-session.request.dto';
import { toTtl } from './dto/session-ttl.dto';
import { SessionListResponseDto, SessionResponseDto, toSessionResponse } from './dto/session.response.dto';
import { ArchiveSessionRequestDto, UpdateSessionRequestDto } from './dto/update-session.request.dto';

@ApiTags('Sessions')
@ApiBearerAuth('api-key')
@Controller('v1/sessions')
export class SessionsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly idempotent: IdempotentExecutor,
  ) {}

  @Post()
  @ApiOperation({ summary: 'Create a session', description: 'Pins the agent id, version and model at creation.' })
  @ApiIdempotencyKey(false)
  @ApiJsonBody(CreateSessionRequestDto, {
    default_agent: { summary: 'The default agent (support_agent)', value: { title: 'Order help', metadata: { channel: 'swagger' } } },
    assistant: { summary: 'Another agent', value: { agent_id: 'assistant', title: 'Weather and time' } },
  })
  @ApiCreatedResponse({ type: SessionResponseDto })
  @ApiErrors('invalid_request', 'agent_not_found', 'idempotency_conflict', 'idempotency_in_progress')
  async create(@CurrentPrincipal() principal: Principal, @Body() dto: CreateSessionRequestDto, @Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    // The insert, the stored response and the audit record: one statement. An inline agent
    // configuration is stored first (its own row), so that request takes a transaction instead:
    // the configuration, the session and the stored response commit together or not at all.
    await this.idempotent.execute(req, reply, { batch: dto.agent === undefined }, async () => {
      const s = await this.commands.execute(new CreateSessionCommand(principal, { agentId: dto.agent_id, agent: dto.agent, title: dto.title, metadata: dto.metadata, defaultConcurrency: dto.default_concurrency, ttl: toTtl(dto.ttl) }));
      return { status: 201, body: toSessionResponse(s) };
    });
  }

  @Get()
  @ApiOperation({
    summary: 'List sessions',
    description: 'Members see their own sessions, admins every session of the tenant. Default order: desc. `work_status=` lists only the sessions with that work status now.',
  })
  @ApiOkResponse({ type: SessionListResponseDto })
  @ApiErrors('invalid_request', 'invalid_cursor')
  async list(@CurrentPrincipal() principal: Principal, @Query() q: ListSessionsQueryDto): Promise<SessionListResponseDto> {
    const { items, hasMore, workStatuses } = await this.queries.execute(
      new ListSessionsQuery(principal, { after: q.after, limit: q.limit ?? 20, order: q.order ?? 'desc' }, { workStatus: q.work_status }),
    );
    return listPage(
      items.map((s) => toSessionResponse(s, workStatuses.get(s.id))),
      hasMore,
    );
  }

  /** A session resource with its work status now. */
  private async withWorkStatus(s: Readonly<SessionProps>): Promise<SessionResponseDto> {
    const statuses = await this.queries.execute(new SessionWorkStatusQuery([s.id]));
    return toSessionResponse(s, statuses.get(s.id));
  }

  @Get(':id')
  @ApiOperation({ summary: 'Get a session' })
  @ApiOkResponse({ type: SessionResponseDto })
  @ApiErrors('session_not_found')
  async get(@CurrentPrincipal() principal: Principal, @Param('id') id: string): Promise<SessionResponseDto> {
    return this.withWorkStatus(await this.queries.execute(new GetSessionQuery(principal, id)));
  }

  @Get(':id/subagents')
  @ApiOperation({
    summary: "List a session's subagents",
    description:
      "The child sessions its runs created with `create_subagent` (CONTRACT 16), a page at a time (oldest first by default), each with `parent_session_id`, `parent_run_id` and `subagent {name, status}`; a subagent's turns are its runs (`GET /v1/sessions/{id}/runs`). A member sees only their own.",
  })
  @ApiOkResponse({ type: SessionListResponseDto })
  @ApiErrors('session_not_found', 'invalid_request', 'invalid_cursor')
  async subagents(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Query() q: ListQueryDto): Promise<SessionListResponseDto> {
    const { items, hasMore } = await this.queries.execute(new ListSubagentsQuery(principal, id, { after: q.after, limit: q.limit ?? 20, order: q.order ?? 'asc' }));
    const statuses = items.length ? await this.queries.execute(new SessionWorkStatusQuery(items.map((c) => c.id))) : new Map();
    return listPage(
      items.map((c) => toSessionResponse(c, statuses.get(c.id))),
      hasMore,
    );
  }

  @Post(':id')
  @ApiOperation({
    summary: 'Update a session',
    description: 'Title, metadata (replaced whole) and `agent.model`. With `expected_revision`, a stale revision is 409 `session_conflict`.',
  })
  @ApiIdempotencyKey(false)
  @ApiJsonBody(UpdateSessionRequestDto, {
    title_and_metadata: { summary: 'Rename and tag', value: { title: 'Order O-1001', metadata: { channel: 'swagger', priority: 'high' } } },
  })
  @ApiOkResponse({ type: SessionResponseDto })
  @ApiErrors('invalid_request', 'session_not_found', 'session_conflict', 'idempotency_conflict', 'idempotency_in_progress')
  async update(
    @CurrentPrincipal() principal: Principal,
    @Param('id') id: string,
    @Body() dto: UpdateSessionRequestDto,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ) {
    await this.idempotent.execute(req, reply, {}, async () => {
      const s = await this.commands.execute(
        new UpdateSessionCommand(principal, id, { title: dto.title, metadata: dto.metadata, model: dto.agent?.model, defaultConcurrency: dto.default_concurrency, ttl: toTtl(dto.ttl) }, dto.expected_revision),
      );
      return { status: 200, body: await this.withWorkStatus(s) };
    });
  }

  @Post(':id/archive')
  @ApiOperation({ summary: 'Archive a session', description: 'History is kept; new runs answer 409 `session_archived`.' })
  @ApiIdempotencyKey(false)
  @ApiJsonBody(ArchiveSessionRequestDto, { archive: { summary: 'Archive at any revision', value: {} } })
  @ApiOkResponse({ type: SessionResponseDto })
  @ApiErrors('session_not_found', 'session_conflict')
  async archive(
    @CurrentPrincipal() principal: Principal,
    @Param('id') id: string,
    @Body() dto: ArchiveSessionRequestDto,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ) {
    await this.idempotent.execute(req, reply, {}, async () => {
      const s = await this.commands.execute(new ArchiveSessionCommand(principal, id, dto.expected_revision));
      return { status: 200, body: await this.withWorkStatus(s) };
    });
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a session', description: 'Afterwards the session and its runs, messages and events answer 404.' })
  @ApiNoContentResponse({ description: 'Deleted.' })
  @ApiErrors('session_not_found')
  async remove(@CurrentPrincipal() principal: Principal, @Param('id') id: string): Promise<void> {
    await this.commands.execute(new DeleteSessionCommand(principal, id));
  }
}
