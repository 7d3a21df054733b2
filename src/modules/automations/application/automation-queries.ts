import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { Principal } from '../../../common/auth/principal';
import { SortOrder } from '../../../common/http/pagination';
import { AutomationInvocation, AutomationProps, invocationNotFound } from '../domain/automation';
import { AutomationRepository } from '../domain/automation.repository';
import { loadVisible } from './automation-commands';

export interface AutomationView {
  automation: AutomationProps;
  lastInvocation: AutomationInvocation | null;
}

export class GetAutomationQuery extends Query<AutomationView> {
  constructor(
    readonly principal: Principal,
    readonly id: string,
  ) {
    super();
  }
}

export class ListAutomationsQuery extends Query<{ items: AutomationView[]; hasMore: boolean }> {
  constructor(
    readonly principal: Principal,
    readonly page: { after?: string; limit: number; order: SortOrder; sessionId?: string },
  ) {
    super();
  }
}

export class ListAutomationInvocationsQuery extends Query<{ items: AutomationInvocation[]; hasMore: boolean }> {
  constructor(
    readonly principal: Principal,
    readonly automationId: string,
    readonly page: { after?: string; limit: number; order: SortOrder },
  ) {
    super();
  }
}

/** One invocation; `automationId` null: by its id alone (webhook payloads). Invisible or missing: 404. */
export class GetAutomationInvocationQuery extends Query<AutomationInvocation> {
  constructor(
    readonly principal: Principal,
    readonly automationId: string | null,
    readonly invocationId: string,
  ) {
    super();
  }
}

@QueryHandler(GetAutomationQuery)
export class GetAutomationHandler implements IQueryHandler<GetAutomationQuery> {
  constructor(private readonly repo: AutomationRepository) {}
  async execute({ principal, id }: GetAutomationQuery): Promise<AutomationView> {
    const automation = await loadVisible(this.repo, principal, id);
    const last = await this.repo.lastInvocations([id]);
    return { automation, lastInvocation: last.get(id) ?? null };
  }
}

@QueryHandler(ListAutomationsQuery)
export class ListAutomationsHandler implements IQueryHandler<ListAutomationsQuery> {
  constructor(private readonly repo: AutomationRepository) {}
  async execute({ principal, page }: ListAutomationsQuery) {
    const { items, hasMore } = await this.repo.list(principal, page);
    const last = await this.repo.lastInvocations(items.map((a) => a.id));
    return { items: items.map((automation) => ({ automation, lastInvocation: last.get(automation.id) ?? null })), hasMore };
  }
}

@QueryHandler(ListAutomationInvocationsQuery)
export class ListAutomationInvocationsHandler implements IQueryHandler<ListAutomationInvocationsQuery> {
  constructor(private readonly repo: AutomationRepository) {}
  async execute({ principal, automationId, page }: ListAutomationInvocationsQuery) {
    await loadVisible(this.repo, principal, automationId);
    return this.repo.listInvocations(automationId, page);
  }
}

@QueryHandler(GetAutomationInvocationQuery)
export class GetAutomationInvocationHandler implements IQueryHandler<GetAutomationInvocationQuery> {
  constructor(private readonly repo: AutomationRepository) {}
  async execute({ principal, automationId, invocationId }: GetAutomationInvocationQuery) {
    const inv = automationId === null ? await this.repo.findInvocationById(invocationId) : await this.repo.findInvocation(automationId, invocationId);
    if (!inv) throw invocationNotFound(invocationId);
    try {
      await loadVisible(this.repo, principal, inv.automationId);
    } catch {
      throw invocationNotFound(invocationId);
    }
    return inv;
  }
}
