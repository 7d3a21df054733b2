import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { WebhookEndpoint } from '../../../domain/webhook-events';
import { newWebhookSecret, WebhookSecretBox } from '../../../domain/webhook-signature';
import { WebhookEndpointRepository } from '../../../domain/webhook.repository';
import { webhookNotFound } from '../../webhook-not-found';
import { RotateWebhookSecretCommand } from './rotate-webhook-secret.command';

@CommandHandler(RotateWebhookSecretCommand)
export class RotateWebhookSecretHandler implements ICommandHandler<RotateWebhookSecretCommand> {
  constructor(
    private readonly repo: WebhookEndpointRepository,
    private readonly box: WebhookSecretBox,
  ) {}

  async execute(cmd: RotateWebhookSecretCommand): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
    const secret = newWebhookSecret();
    const endpoint = await this.repo.update(cmd.principal.tenantId, cmd.id, { sealedSecret: this.box.seal(secret) });
    if (!endpoint) throw webhookNotFound(cmd.id);
    return { endpoint, secret };
  }
}
