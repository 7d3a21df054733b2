import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { WebhookEndpointRepository } from '../../../domain/webhook.repository';
import { webhookNotFound } from '../../webhook-not-found';
import { DeleteWebhookCommand } from './delete-webhook.command';

@CommandHandler(DeleteWebhookCommand)
export class DeleteWebhookHandler implements ICommandHandler<DeleteWebhookCommand> {
  constructor(private readonly repo: WebhookEndpointRepository) {}

  async execute(cmd: DeleteWebhookCommand): Promise<void> {
    if (!(await this.repo.delete(cmd.principal.tenantId, cmd.id))) throw webhookNotFound(cmd.id);
  }
}
