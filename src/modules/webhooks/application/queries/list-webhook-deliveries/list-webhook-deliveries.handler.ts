import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { invalidCursor } from '../../../../../common/http/pagination';
import { WebhookDelivery } from '../../../domain/webhook-events';
import { Page, WebhookEndpointRepository } from '../../../domain/webhook.repository';
import { webhookNotFound } from '../../webhook-not-found';
import { ListWebhookDeliveriesQuery } from './list-webhook-deliveries.query';

/** Delivery ids as the fan-out makes them (`'whevt_' || 32 hex digits`, webhook.typeorm-repository.ts). */
const DELIVERY_ID = /^whevt_[0-9a-f]{32}$/;

@QueryHandler(ListWebhookDeliveriesQuery)
export class ListWebhookDeliveriesHandler implements IQueryHandler<ListWebhookDeliveriesQuery> {
  constructor(private readonly repo: WebhookEndpointRepository) {}

  async execute(q: ListWebhookDeliveriesQuery): Promise<Page<WebhookDelivery>> {
    const tenant = q.principal.tenantId;
    if (!(await this.repo.find(tenant, q.endpointId))) throw webhookNotFound(q.endpointId);
    // A malformed `after` (`0x10`, `-1`) is 400 invalid_cursor, not an empty page (CONTRACT section 4).
    if (q.page.after !== undefined && !DELIVERY_ID.test(q.page.after)) throw invalidCursor(q.page.after);
    return this.repo.deliveries(tenant, q.endpointId, q.page.after, q.page.limit, q.page.order);
  }
}
