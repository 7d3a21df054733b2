import { Controller, Get, Param, Query } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../../../common/errors/error.dto';
import { listPage, ListQueryDto } from '../../../common/http/pagination';
import { GetAgentQuery } from '../application/queries/get-agent/get-agent.query';
import { ListAgentsQuery } from '../application/queries/list-agents/list-agents.query';
import { AgentListResponseDto, AgentResponseDto, toAgentResponse } from './dto/agent.response.dto';

@ApiTags('Agents')
@ApiBearerAuth('api-key')
@Controller('v1/agents')
export class AgentsController {
  constructor(private readonly queries: QueryBus) {}

  @Get()
  @ApiOperation({
    summary: 'List agents',
    description: 'The configured agents (newest version of each) with their tools, sorted by id. Any API key may read them. Default order: asc.',
  })
  @ApiOkResponse({ type: AgentListResponseDto })
  @ApiErrors('invalid_request', 'invalid_cursor')
  async list(@Query() q: ListQueryDto): Promise<AgentListResponseDto> {
    const { items, hasMore } = await this.queries.execute(new ListAgentsQuery({ after: q.after, limit: q.limit ?? 20, order: q.order ?? 'asc' }));
    return listPage(items.map(toAgentResponse), hasMore);
  }

  @Get(':id')
  @ApiOperation({ summary: 'Get an agent', description: 'The newest version of one agent, with its tools.' })
  @ApiParam({ name: 'id', example: 'support_agent' })
  @ApiOkResponse({ type: AgentResponseDto })
  @ApiErrors('agent_not_found')
  async get(@Param('id') id: string): Promise<AgentResponseDto> {
    return toAgentResponse(await this.queries.execute(new GetAgentQuery(id)));
  }
}
