import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import type { WebhookEndpoint } from '../../../domain/webhook-events';

export class GetWebhookQuery extends Query<WebhookEndpoint> {
  constructor(
    readonly principal: Principal,
    readonly id: string,
  ) {
    super();
  }
}
