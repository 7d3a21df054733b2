import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AdminOnly, CurrentPrincipal } from '../../../common/auth/auth.decorators';
import { Principal } from '../../../common/auth/principal';
import { DomainError } from '../../../common/errors/domain-error';
import { ApiErrors } from '../../../common/errors/error.dto';
import { ApiIdempotencyKey, ApiJsonBody } from '../../../common/http/api-docs.decorators';
import { listPage, ListQueryDto } from '../../../common/http/pagination';
import { IdempotentExecutor } from '../../idempotency/application/idempotent-executor';
import { CreateAgentVersionCommand, DeleteAgentCommand } from '../application/commands/agent-commands';
import { GetAgentQuery, ListAgentsQuery, ListAgentVersionsQuery, PrepareAgentVersionQuery } from '../application/queries/agent-queries';
import { AgentVersionInput } from '../domain/agent-definition';
import { AgentListResponseDto, AgentResponseDto, AgentVersionListResponseDto, toAgentResponse } from './dto/agent.response.dto';
import { AgentVersionBodyDto, CreateAgentRequestDto, CreateAgentVersionRequestDto } from './dto/create-agent.request.dto';
import { AgentVersionsQueryDto } from './dto/list-agent-versions.request.dto';

const EXAMPLE_BODY = {
  id: 'crm_agent',
  description: 'Looks customers up in the CRM.',
  model: 'scripted',
  instructions: 'You are a careful support agent.',
  tools: ['get_time', { type: 'function', name: 'confirm_with_user', description: 'Asks the user to confirm.', parameters: { type: 'object', properties: { question: { type: 'string' } } } }],
};

@ApiTags('Agents')
@ApiBearerAuth('api-key')
@Controller('v1/agents')
export class AgentsController {
  constructor(
    private readonly queries: QueryBus,
    private readonly commands: CommandBus,
    private readonly idempotent: IdempotentExecutor,
  ) {}

  @Get()
  @ApiOperation({
    summary: 'List agents',
    description:
      'The file agents (shared, `source: "file"`) and this tenant\'s API agents (`source: "api"`), newest version of each with its tools, sorted by id. Any API key may read them. Default order: asc.',
  })
  @ApiOkResponse({ type: AgentListResponseDto })
  @ApiErrors('invalid_request', 'invalid_cursor')
  async list(@CurrentPrincipal() principal: Principal, @Query() q: ListQueryDto): Promise<AgentListResponseDto> {
    const { items, hasMore } = await this.queries.execute(new ListAgentsQuery(principal, { after: q.after, limit: q.limit ?? 20, order: q.order ?? 'asc' }));
    return listPage(items.map(toAgentResponse), hasMore);
  }

  @Post()
  @AdminOnly()
  @ApiOperation({
    summary: 'Create an agent (admin)',
    description:
      'Version "1" of a new API agent of this tenant. Tools may be built-in names, `http`, `mcp` (its tools are listed now and pinned with the version) and `function` tools. ' +
      'An id that exists (a file agent, or a live agent of the tenant): 409 `agent_read_only`. A URL outside OUTBOUND_URL_ALLOWLIST, an MCP server that cannot list its tools, or an invalid schema: 400.',
  })
  @ApiIdempotencyKey(false)
  @ApiJsonBody(CreateAgentRequestDto, { function_tool: { summary: 'A built-in and a client-side function tool', value: EXAMPLE_BODY } })
  @ApiCreatedResponse({ type: AgentResponseDto })
  @ApiErrors('invalid_request', 'forbidden', 'agent_read_only', 'idempotency_conflict', 'idempotency_in_progress')
  async create(@CurrentPrincipal() principal: Principal, @Body() dto: CreateAgentRequestDto, @Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    await this.createVersion(principal, inputOf(dto.id, dto), true, req, reply);
  }

  @Get(':id')
  @ApiOperation({ summary: 'Get an agent', description: 'The newest version of one agent, with its tools. Another tenant\'s API agent: 404.' })
  @ApiParam({ name: 'id', example: 'support_agent' })
  @ApiOkResponse({ type: AgentResponseDto })
  @ApiErrors('agent_not_found')
  async get(@CurrentPrincipal() principal: Principal, @Param('id') id: string): Promise<AgentResponseDto> {
    return toAgentResponse(await this.queries.execute(new GetAgentQuery(principal, id)));
  }

  @Delete(':id')
  @AdminOnly()
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete an agent (admin)', description: 'No new sessions may use it; sessions already pinned to one of its versions keep it. File agents: 409 `agent_read_only`.' })
  @ApiParam({ name: 'id', example: 'crm_agent' })
  @ApiNoContentResponse({ description: 'Deleted.' })
  @ApiErrors('agent_not_found', 'agent_read_only', 'forbidden')
  async remove(@CurrentPrincipal() principal: Principal, @Param('id') id: string): Promise<void> {
    await this.commands.execute(new DeleteAgentCommand(principal, id));
  }

  @Get(':id/versions')
  @ApiOperation({
    summary: 'List the versions of an agent',
    description: 'A page of its versions, oldest first by default (`order=desc`: newest first). The next page: `after` = the `version` of the last item.',
  })
  @ApiParam({ name: 'id', example: 'support_agent' })
  @ApiOkResponse({ type: AgentVersionListResponseDto })
  @ApiErrors('agent_not_found', 'invalid_request', 'invalid_cursor')
  async versions(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Query() q: AgentVersionsQueryDto): Promise<AgentVersionListResponseDto> {
    const { items, hasMore } = await this.queries.execute(new ListAgentVersionsQuery(principal, id, { after: q.after, limit: q.limit ?? 20, order: q.order ?? 'asc' }));
    return { object: 'list', data: items.map(toAgentResponse), has_more: hasMore };
  }

  @Post(':id/versions')
  @AdminOnly()
  @ApiOperation({
    summary: 'Create the next version of an agent (admin)',
    description: 'Versions are immutable: this adds the next one, which new sessions get; existing sessions keep theirs. File agents: 409 `agent_read_only`.',
  })
  @ApiParam({ name: 'id', example: 'crm_agent' })
  @ApiIdempotencyKey(false)
  @ApiJsonBody(CreateAgentVersionRequestDto, { next_version: { summary: 'A new version', value: { ...EXAMPLE_BODY, id: undefined, instructions: 'Be brief.' } } })
  @ApiCreatedResponse({ type: AgentResponseDto })
  @ApiErrors('invalid_request', 'forbidden', 'agent_not_found', 'agent_read_only', 'idempotency_conflict', 'idempotency_in_progress')
  async createNext(
    @CurrentPrincipal() principal: Principal,
    @Param('id') id: string,
    @Body() dto: CreateAgentVersionRequestDto,
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    if (dto.id !== undefined && dto.id !== id) throw new DomainError('invalid_request', 'id must be the id in the path', { errors: [{ field: 'id', message: 'must be the id in the path' }] });
    await this.createVersion(principal, inputOf(id, dto), false, req, reply);
  }

  @Get(':id/versions/:version')
  @ApiOperation({
    summary: 'Get one version of an agent',
    description:
      'One version with its tools. Also answers the inline configuration a session of this tenant pinned (agent id `inline_...`, version "1"; lists do not show those). Another tenant\'s: 404.',
  })
  @ApiParam({ name: 'id', example: 'support_agent' })
  @ApiParam({ name: 'version', example: '1' })
  @ApiOkResponse({ type: AgentResponseDto })
  @ApiErrors('agent_not_found')
  async version(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Param('version') version: string): Promise<AgentResponseDto> {
    return toAgentResponse(await this.queries.execute(new GetAgentQuery(principal, id, version)));
  }

  /** The definition is checked and its MCP servers listed first, outside any transaction; then one insert. */
  private async createVersion(principal: Principal, input: AgentVersionInput, first: boolean, req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const prepared = await this.queries.execute(new PrepareAgentVersionQuery(principal, input, first));
    await this.idempotent.execute(req, reply, {}, async () => {
      const a = await this.commands.execute(new CreateAgentVersionCommand(principal, prepared, first));
      return { status: 201, body: toAgentResponse(a) };
    });
  }
}

function inputOf(id: string, dto: AgentVersionBodyDto): AgentVersionInput {
  return { id, description: dto.description, model: dto.model, instructions: dto.instructions, tools: dto.tools, ...(dto.handoffs !== undefined ? { handoffs: dto.handoffs } : {}), ...(dto.subagents !== undefined ? { subagents: dto.subagents } : {}) };
}
