import { Command } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import type { WebhookEndpoint, WebhookEventType } from '../../../domain/webhook-events';

export interface WebhookChanges {
  url?: string;
  events?: WebhookEventType[];
  description?: string | null;
  enabled?: boolean;
}

/** Only the fields given change. */
export class UpdateWebhookCommand extends Command<WebhookEndpoint> {
  constructor(
    readonly principal: Principal,
    readonly id: string,
    readonly changes: WebhookChanges,
  ) {
    super();
  }
}
