import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { OutboundHttpClient } from '../../../../../common/outbound/outbound-http';
import { WebhookEndpoint } from '../../../domain/webhook-events';
import { WebhookEndpointRepository } from '../../../domain/webhook.repository';
import { webhookNotFound } from '../../webhook-not-found';
import { checkWebhookUrl } from '../../webhook-url';
import { UpdateWebhookCommand } from './update-webhook.command';

@CommandHandler(UpdateWebhookCommand)
export class UpdateWebhookHandler implements ICommandHandler<UpdateWebhookCommand> {
  constructor(
    private readonly repo: WebhookEndpointRepository,
    private readonly http: OutboundHttpClient,
  ) {}

  async execute(cmd: UpdateWebhookCommand): Promise<WebhookEndpoint> {
    const { url, events, description, enabled } = cmd.changes;
    if (url !== undefined) checkWebhookUrl(this.http, url);
    const e = await this.repo.update(cmd.principal.tenantId, cmd.id, { url, events: events ? [...new Set(events)] : undefined, description, enabled });
    if (!e) throw webhookNotFound(cmd.id);
    return e;
  }
}
