import { Module } from '@nestjs/common';
import { AppConfig } from '../../common/config/app-config';
import { resolveWebhookSecretKey } from '../../common/config/webhook-secret-key';
import { AttachmentsModule } from '../attachments/attachments.module';
import { RunsModule } from '../runs/runs.module';
import { WebhooksController } from './api/webhooks.controller';
import { WebhookDeliveryWorker } from './application/webhook-delivery.worker';
import { WebhookEndpoints } from './application/webhook-endpoints.service';
import { WebhookPayloads } from './application/webhook-payloads';
import { WebhookSecretBox } from './domain/webhook-signature';
import { WebhookStore } from './infrastructure/webhook-store';

/**
 * Webhooks (CONTRACT section 14): endpoints per tenant, a delivery outbox filled by this
 * module's triggers on `runs` and `attachments` in the changing transaction (migration
 * 1764497800000-webhooks), and a delivery worker on every node. Objects are read through the
 * runs module's `RunViews` and the attachments module's `GetAttachmentQuery`.
 */
@Module({
  imports: [RunsModule, AttachmentsModule],
  controllers: [WebhooksController],
  providers: [
    { provide: WebhookSecretBox, inject: [AppConfig], useFactory: (config: AppConfig) => new WebhookSecretBox(resolveWebhookSecretKey(config)) },
    WebhookStore,
    WebhookEndpoints,
    WebhookPayloads,
    WebhookDeliveryWorker,
  ],
})
export class WebhooksModule {}
