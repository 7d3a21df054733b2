import { Query } from '@nestjs/cqrs';
import { SortOrder } from '../../../../../common/http/pagination';
import { AgentView } from '../../agent-view';

export class ListAgentsQuery extends Query<{ items: AgentView[]; hasMore: boolean }> {
  constructor(readonly page: { after?: string; limit: number; order: SortOrder }) {
    super();
  }
}
