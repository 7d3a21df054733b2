import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { invalidCursor } from '../../../../../common/http/pagination';
import { WebhookEndpoint } from '../../../domain/webhook-events';
import { Page, WebhookEndpointRepository } from '../../../domain/webhook.repository';
import { ListWebhooksQuery } from './list-webhooks.query';

@QueryHandler(ListWebhooksQuery)
export class ListWebhooksHandler implements IQueryHandler<ListWebhooksQuery> {
  constructor(private readonly repo: WebhookEndpointRepository) {}

  async execute(q: ListWebhooksQuery): Promise<Page<WebhookEndpoint>> {
    const tenant = q.principal.tenantId;
    // CONTRACT section 4: an `after` that names no endpoint of this tenant is 400, not a page of what sorts after it.
    if (q.page.after !== undefined && !(await this.repo.find(tenant, q.page.after))) throw invalidCursor(q.page.after);
    return this.repo.list(tenant, q.page.after, q.page.limit, q.page.order);
  }
}
