import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { DomainError } from '../../../../../common/errors/domain-error';
import { AgentCatalog } from '../../../domain/agent-definition';
import { ToolRegistry } from '../../../domain/tool';
import { toAgentView } from '../../agent-view';
import { GetAgentQuery } from './get-agent.query';

@QueryHandler(GetAgentQuery)
export class GetAgentHandler implements IQueryHandler<GetAgentQuery> {
  constructor(
    private readonly catalog: AgentCatalog,
    private readonly tools: ToolRegistry,
  ) {}

  async execute({ agentId }: GetAgentQuery) {
    const def = this.catalog.get(agentId);
    if (!def) throw new DomainError('agent_not_found', `agent "${agentId}" is not configured`, { agent_id: agentId });
    return toAgentView(def, this.tools);
  }
}
