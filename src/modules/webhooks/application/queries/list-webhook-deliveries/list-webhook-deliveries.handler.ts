import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { WebhookDelivery } from '../../../domain/webhook-events';
import { Page, WebhookEndpointRepository } from '../../../domain/webhook.repository';
import { webhookNotFound } from '../../webhook-not-found';
import { ListWebhookDeliveriesQuery } from './list-webhook-deliveries.query';

@QueryHandler(ListWebhookDeliveriesQuery)
export class ListWebhookDeliveriesHandler implements IQueryHandler<ListWebhookDeliveriesQuery> {
  constructor(private readonly repo: WebhookEndpointRepository) {}

  async execute(q: ListWebhookDeliveriesQuery): Promise<Page<WebhookDelivery>> {
    const tenant = q.principal.tenantId;
    if (!(await this.repo.find(tenant, q.endpointId))) throw webhookNotFound(q.endpointId);
    return this.repo.deliveries(tenant, q.endpointId, q.page.after, q.page.limit);
  }
}
