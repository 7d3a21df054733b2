import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { WebhookEndpoint } from '../../../domain/webhook-events';
import { WebhookEndpointRepository } from '../../../domain/webhook.repository';
import { webhookNotFound } from '../../webhook-not-found';
import { GetWebhookQuery } from './get-webhook.query';

@QueryHandler(GetWebhookQuery)
export class GetWebhookHandler implements IQueryHandler<GetWebhookQuery> {
  constructor(private readonly repo: WebhookEndpointRepository) {}

  async execute(q: GetWebhookQuery): Promise<WebhookEndpoint> {
    const e = await this.repo.find(q.principal.tenantId, q.id);
    if (!e) throw webhookNotFound(q.id);
    return e;
  }
}
