import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import type { WebhookDelivery } from '../../../domain/webhook-events';
import type { Page } from '../../../domain/webhook.repository';

/** An endpoint's delivery log, newest first. */
export class ListWebhookDeliveriesQuery extends Query<Page<WebhookDelivery>> {
  constructor(
    readonly principal: Principal,
    readonly endpointId: string,
    readonly page: { after?: string; limit: number; order?: 'asc' | 'desc' },
  ) {
    super();
  }
}
