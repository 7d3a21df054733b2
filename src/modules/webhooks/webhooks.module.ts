import { Module } from '@nestjs/common';
import { AppConfig } from '../../common/config/app-config';
import { resolveWebhookSecretKey } from '../../common/config/webhook-secret-key';
import { AttachmentsModule } from '../attachments/attachments.module';
import { RunsModule } from '../runs/runs.module';
import { WebhooksController } from './api/webhooks.controller';
import { CreateWebhookHandler } from './application/commands/create-webhook/create-webhook.handler';
import { DeleteWebhookHandler } from './application/commands/delete-webhook/delete-webhook.handler';
import { RotateWebhookSecretHandler } from './application/commands/rotate-webhook-secret/rotate-webhook-secret.handler';
import { UpdateWebhookHandler } from './application/commands/update-webhook/update-webhook.handler';
import { HasWebhookSubscribersHandler } from './application/queries/has-webhook-subscribers/has-webhook-subscribers.handler';
import { GetWebhookHandler } from './application/queries/get-webhook/get-webhook.handler';
import { GetWebhookSecretHandler } from './application/queries/get-webhook-secret/get-webhook-secret.handler';
import { ListWebhookDeliveriesHandler } from './application/queries/list-webhook-deliveries/list-webhook-deliveries.handler';
import { ListWebhooksHandler } from './application/queries/list-webhooks/list-webhooks.handler';
import { WebhookDeliveryWorker } from './application/webhook-delivery.worker';
import { WebhookPayloads } from './application/webhook-payloads';
import { WebhookSecretBox } from './domain/webhook-signature';
import { WebhookDeliveryQueue, WebhookEndpointRepository } from './domain/webhook.repository';
import { WebhookTypeormRepository } from './infrastructure/webhook.typeorm-repository';

/**
 * Webhooks (CONTRACT section 14): endpoints per tenant (admin commands and queries), and a
 * delivery worker on every node that fans the integration events of the outbox (written by the
 * runs and attachments modules with their changes, `common/outbox`) out to the subscribed
 * endpoints and delivers them. Objects are read through the runs module's `RunViews` and the
 * attachments module's `GetAttachmentQuery`; no other module's table is read or written here.
 */
@Module({
  imports: [RunsModule, AttachmentsModule],
  controllers: [WebhooksController],
  providers: [
    { provide: WebhookSecretBox, inject: [AppConfig], useFactory: (config: AppConfig) => new WebhookSecretBox(resolveWebhookSecretKey(config)) },
    WebhookTypeormRepository,
    { provide: WebhookEndpointRepository, useExisting: WebhookTypeormRepository },
    { provide: WebhookDeliveryQueue, useExisting: WebhookTypeormRepository },
    CreateWebhookHandler,
    HasWebhookSubscribersHandler,
    UpdateWebhookHandler,
    DeleteWebhookHandler,
    RotateWebhookSecretHandler,
    ListWebhooksHandler,
    GetWebhookHandler,
    GetWebhookSecretHandler,
    ListWebhookDeliveriesHandler,
    WebhookPayloads,
    WebhookDeliveryWorker,
  ],
})
export class WebhooksModule {}
