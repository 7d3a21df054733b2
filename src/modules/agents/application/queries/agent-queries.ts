import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { DomainError } from '../../../../common/errors/domain-error';
import { invalidCursor, SortOrder } from '../../../../common/http/pagination';
import { Principal } from '../../../../common/auth/principal';
import { AgentDirectory, AgentVersionInput, PreparedAgentVersion } from '../../domain/agent-definition';
import { AgentView } from '../agent-view';

const notFound = (id: string) => new DomainError('agent_not_found', `agent "${id}" is not configured`, { agent_id: id });

export class ListAgentsQuery extends Query<{ items: AgentView[]; hasMore: boolean }> {
  constructor(
    readonly principal: Principal,
    readonly page: { after?: string; limit: number; order: SortOrder },
  ) {
    super();
  }
}

export class GetAgentQuery extends Query<AgentView> {
  constructor(
    readonly principal: Principal,
    readonly agentId: string,
    readonly version?: string,
  ) {
    super();
  }
}

/**
 * The agent version a session pinned: also of a deleted agent and of an inline configuration
 * (hidden agents), which `GetAgentQuery` does not show. Only the caller's tenant's (or a file agent).
 */
export class GetPinnedAgentQuery extends Query<AgentView> {
  constructor(
    readonly principal: Principal,
    readonly agentId: string,
    readonly version: string,
  ) {
    super();
  }
}

/** One page of an agent's versions; `after` is a version of this agent (versions share the agent's id). */
export class ListAgentVersionsQuery extends Query<{ items: AgentView[]; hasMore: boolean }> {
  constructor(
    readonly principal: Principal,
    readonly agentId: string,
    readonly page: { after?: string; limit: number; order: SortOrder },
  ) {
    super();
  }
}

/** Checks a definition and resolves its tools (MCP `tools/list`) before any transaction. */
export class PrepareAgentVersionQuery extends Query<PreparedAgentVersion> {
  constructor(
    readonly principal: Principal,
    readonly input: AgentVersionInput,
    readonly first: boolean,
  ) {
    super();
  }
}

/** File agents and the caller's tenant's API agents, newest version of each, by id. */
@QueryHandler(ListAgentsQuery)
export class ListAgentsHandler implements IQueryHandler<ListAgentsQuery> {
  constructor(private readonly directory: AgentDirectory) {}

  async execute({ principal, page }: ListAgentsQuery) {
    const all = await this.directory.list(principal.tenantId);
    if (page.order === 'desc') all.reverse();
    let start = 0;
    if (page.after !== undefined) {
      const idx = all.findIndex((a) => a.id === page.after);
      if (idx === -1) throw invalidCursor(page.after);
      start = idx + 1;
    }
    return { items: all.slice(start, start + page.limit), hasMore: start + page.limit < all.length };
  }
}

@QueryHandler(GetAgentQuery)
export class GetAgentHandler implements IQueryHandler<GetAgentQuery> {
  constructor(private readonly directory: AgentDirectory) {}

  async execute({ principal, agentId, version }: GetAgentQuery) {
    if (version === undefined) {
      const a = await this.directory.find(principal.tenantId, agentId);
      if (!a) throw notFound(agentId);
      return a;
    }
    // A live agent's versions, or the one version of an inline session configuration (hidden from lists).
    const live = agentId.startsWith('inline_') || (await this.directory.find(principal.tenantId, agentId));
    const a = live ? await this.directory.findPinned(principal.tenantId, agentId, version) : null;
    if (!a) throw new DomainError('agent_not_found', `agent "${agentId}" has no version "${version}"`, { agent_id: agentId, version });
    return a;
  }
}

@QueryHandler(GetPinnedAgentQuery)
export class GetPinnedAgentHandler implements IQueryHandler<GetPinnedAgentQuery> {
  constructor(private readonly directory: AgentDirectory) {}

  async execute({ principal, agentId, version }: GetPinnedAgentQuery) {
    const a = await this.directory.findPinned(principal.tenantId, agentId, version);
    if (!a) throw new DomainError('agent_not_found', `agent "${agentId}" has no version "${version}"`, { agent_id: agentId, version });
    return a;
  }
}

@QueryHandler(ListAgentVersionsQuery)
export class ListAgentVersionsHandler implements IQueryHandler<ListAgentVersionsQuery> {
  constructor(private readonly directory: AgentDirectory) {}

  async execute({ principal, agentId, page }: ListAgentVersionsQuery) {
    const list = await this.directory.versions(principal.tenantId, agentId);
    if (!list) throw notFound(agentId);
    if (page.order === 'desc') list.reverse();
    let start = 0;
    if (page.after !== undefined) {
      const idx = list.findIndex((a) => a.version === page.after);
      if (idx === -1) throw invalidCursor(page.after);
      start = idx + 1;
    }
    return { items: list.slice(start, start + page.limit), hasMore: start + page.limit < list.length };
  }
}

@QueryHandler(PrepareAgentVersionQuery)
export class PrepareAgentVersionHandler implements IQueryHandler<PrepareAgentVersionQuery> {
  constructor(private readonly directory: AgentDirectory) {}

  execute({ principal, input, first }: PrepareAgentVersionQuery) {
    return this.directory.prepare(principal.tenantId, input, first);
  }
}
