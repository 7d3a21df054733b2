import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { WebhookEndpointRepository } from '../../../domain/webhook.repository';
import { HasSubscribersQuery } from '../../../../../common/outbox/has-subscribers.query';

@QueryHandler(HasSubscribersQuery)
export class HasWebhookSubscribersHandler implements IQueryHandler<HasSubscribersQuery> {
  constructor(private readonly endpoints: WebhookEndpointRepository) {}

  execute({ tenantId, type }: HasSubscribersQuery): Promise<boolean> {
    return this.endpoints.subscribed(tenantId, type);
  }
}
