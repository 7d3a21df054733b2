import { Command } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import type { WebhookEndpoint } from '../../../domain/webhook-events';

/** A new signing secret (shown only now); attempts from then on are signed with it. */
export class RotateWebhookSecretCommand extends Command<{ endpoint: WebhookEndpoint; secret: string }> {
  constructor(
    readonly principal: Principal,
    readonly id: string,
  ) {
    super();
  }
}
