import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import type { WebhookEndpoint } from '../../../domain/webhook-events';
import type { Page } from '../../../domain/webhook.repository';

/** The caller's tenant's endpoints, ordered by id (ascending unless `order` says desc). */
export class ListWebhooksQuery extends Query<Page<WebhookEndpoint>> {
  constructor(
    readonly principal: Principal,
    readonly page: { after?: string; limit: number; order?: 'asc' | 'desc' },
  ) {
    super();
  }
}
