import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { WebhookSecretBox } from '../../../domain/webhook-signature';
import { WebhookEndpointRepository } from '../../../domain/webhook.repository';
import { GetWebhookSecretQuery, WebhookSecretLookup } from './get-webhook-secret.query';

@QueryHandler(GetWebhookSecretQuery)
export class GetWebhookSecretHandler implements IQueryHandler<GetWebhookSecretQuery> {
  constructor(
    private readonly repo: WebhookEndpointRepository,
    private readonly box: WebhookSecretBox,
  ) {}

  async execute(q: GetWebhookSecretQuery): Promise<WebhookSecretLookup> {
    const found = await this.repo.sealedSecret(q.principal.tenantId, q.id);
    if (!found) return { withheld: 'deleted' };
    if (found.secretVersion !== q.secretVersion) return { withheld: 'rotated' };
    return { secret: this.box.open(found.sealedSecret) };
  }
}
