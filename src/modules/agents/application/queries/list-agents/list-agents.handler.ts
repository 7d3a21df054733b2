import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { invalidCursor } from '../../../../../common/http/pagination';
import { AgentCatalog } from '../../../domain/agent-definition';
import { ToolRegistry } from '../../../domain/tool';
import { toAgentView } from '../../agent-view';
import { ListAgentsQuery } from './list-agents.query';

/** Agents come from a handful of config files held in memory: the page is cut from that list. */
@QueryHandler(ListAgentsQuery)
export class ListAgentsHandler implements IQueryHandler<ListAgentsQuery> {
  constructor(
    private readonly catalog: AgentCatalog,
    private readonly tools: ToolRegistry,
  ) {}

  async execute({ page }: ListAgentsQuery) {
    const all = [...this.catalog.list()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    if (page.order === 'desc') all.reverse();
    let start = 0;
    if (page.after !== undefined) {
      const idx = all.findIndex((a) => a.id === page.after);
      if (idx === -1) throw invalidCursor(page.after);
      start = idx + 1;
    }
    const slice = all.slice(start, start + page.limit);
    return { items: slice.map((d) => toAgentView(d, this.tools)), hasMore: start + page.limit < all.length };
  }
}
