import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { WebhookEndpoint } from '../../../domain/webhook-events';
import { Page, WebhookEndpointRepository } from '../../../domain/webhook.repository';
import { ListWebhooksQuery } from './list-webhooks.query';

@QueryHandler(ListWebhooksQuery)
export class ListWebhooksHandler implements IQueryHandler<ListWebhooksQuery> {
  constructor(private readonly repo: WebhookEndpointRepository) {}

  execute(q: ListWebhooksQuery): Promise<Page<WebhookEndpoint>> {
    return this.repo.list(q.principal.tenantId, q.page.after, q.page.limit);
  }
}
