import { Command } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import type { WebhookEndpoint, WebhookEventType } from '../../../domain/webhook-events';

/** Answers the endpoint and its signing secret (shown only now). */
export class CreateWebhookCommand extends Command<{ endpoint: WebhookEndpoint; secret: string }> {
  constructor(
    readonly principal: Principal,
    readonly url: string,
    readonly events: WebhookEventType[],
    readonly description: string | null,
  ) {
    super();
  }
}
