import { Query } from '@nestjs/cqrs';
import { AgentView } from '../../agent-view';

export class GetAgentQuery extends Query<AgentView> {
  constructor(readonly agentId: string) {
    super();
  }
}
