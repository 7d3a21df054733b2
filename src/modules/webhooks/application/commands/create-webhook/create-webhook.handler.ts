import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { newId } from '../../../../../common/ids/ids';
import { OutboundHttpClient } from '../../../../../common/outbound/outbound-http';
import { WebhookEndpoint } from '../../../domain/webhook-events';
import { newWebhookSecret, WebhookSecretBox } from '../../../domain/webhook-signature';
import { WebhookEndpointRepository } from '../../../domain/webhook.repository';
import { checkWebhookUrl } from '../../webhook-url';
import { CreateWebhookCommand } from './create-webhook.command';

/** A new endpoint of the caller's tenant, enabled, with a fresh secret stored sealed. */
@CommandHandler(CreateWebhookCommand)
export class CreateWebhookHandler implements ICommandHandler<CreateWebhookCommand> {
  constructor(
    private readonly repo: WebhookEndpointRepository,
    private readonly box: WebhookSecretBox,
    private readonly http: OutboundHttpClient,
  ) {}

  async execute(cmd: CreateWebhookCommand): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
    checkWebhookUrl(this.http, cmd.url);
    const now = new Date();
    const endpoint: WebhookEndpoint = {
      id: newId('wh'),
      tenantId: cmd.principal.tenantId,
      url: cmd.url,
      events: [...new Set(cmd.events)],
      description: cmd.description,
      enabled: true,
      secretVersion: 1,
      createdAt: now,
      updatedAt: now,
    };
    const secret = newWebhookSecret();
    await this.repo.insert(endpoint, this.box.seal(secret));
    return { endpoint, secret };
  }
}
