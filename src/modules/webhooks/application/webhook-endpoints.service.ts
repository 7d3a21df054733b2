import { Injectable } from '@nestjs/common';
import { Principal } from '../../../common/auth/principal';
import { DomainError, invalidRequest } from '../../../common/errors/domain-error';
import { newId } from '../../../common/ids/ids';
import { OutboundHttpClient } from '../../../common/outbound/outbound-http';
import { WebhookDelivery, WebhookEndpoint, WebhookEventType } from '../domain/webhook-events';
import { newWebhookSecret, WebhookSecretBox } from '../domain/webhook-signature';
import { WebhookStore } from '../infrastructure/webhook-store';

const notFound = () => new DomainError('not_found', 'webhook not found', { webhook_id: 'not found' });

/** Endpoint management (admin only, own tenant only; another tenant's endpoint answers like a missing id). */
@Injectable()
export class WebhookEndpoints {
  constructor(
    private readonly store: WebhookStore,
    private readonly box: WebhookSecretBox,
    private readonly http: OutboundHttpClient,
  ) {}

  private checkUrl(url: string): void {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw invalidRequest('url is not a URL', [{ field: 'url', message: 'must be an absolute http(s) URL' }]);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw invalidRequest('url must be http or https', [{ field: 'url', message: 'must be an absolute http(s) URL' }]);
    if (!this.http.policy.allows(url)) {
      throw invalidRequest('url is not in OUTBOUND_URL_ALLOWLIST', [{ field: 'url', message: 'must start with an entry of OUTBOUND_URL_ALLOWLIST' }]);
    }
  }

  async create(p: Principal, input: { url: string; events: WebhookEventType[]; description?: string | null }): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
    this.checkUrl(input.url);
    const now = new Date();
    const endpoint: WebhookEndpoint = {
      id: newId('wh'),
      tenantId: p.tenantId,
      url: input.url,
      events: [...new Set(input.events)],
      description: input.description ?? null,
      enabled: true,
      createdAt: now,
      updatedAt: now,
    };
    const secret = newWebhookSecret();
    await this.store.insertEndpoint(endpoint, this.box.seal(secret));
    return { endpoint, secret };
  }

  list(p: Principal, after: string | undefined, limit: number) {
    return this.store.listEndpoints(p.tenantId, after, limit);
  }

  async get(p: Principal, id: string): Promise<WebhookEndpoint> {
    const e = await this.store.findEndpoint(p.tenantId, id);
    if (!e) throw notFound();
    return e;
  }

  async update(p: Principal, id: string, patch: { url?: string; events?: WebhookEventType[]; description?: string | null; enabled?: boolean }): Promise<WebhookEndpoint> {
    if (patch.url !== undefined) this.checkUrl(patch.url);
    const e = await this.store.updateEndpoint(p.tenantId, id, { ...patch, events: patch.events ? [...new Set(patch.events)] : undefined });
    if (!e) throw notFound();
    return e;
  }

  async remove(p: Principal, id: string): Promise<void> {
    if (!(await this.store.deleteEndpoint(p.tenantId, id))) throw notFound();
  }

  async rotateSecret(p: Principal, id: string): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
    const secret = newWebhookSecret();
    const e = await this.store.updateEndpoint(p.tenantId, id, { sealedSecret: this.box.seal(secret) });
    if (!e) throw notFound();
    return { endpoint: e, secret };
  }

  async deliveries(p: Principal, id: string, after: string | undefined, limit: number): Promise<{ items: WebhookDelivery[]; hasMore: boolean }> {
    await this.get(p, id);
    return this.store.listDeliveries(p.tenantId, id, after, limit);
  }
}
