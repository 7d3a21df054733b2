import { Injectable } from '@nestjs/common';
import { toJsonb } from '../../../common/database/jsonb';
import { queryRows } from '../../../common/database/sql';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { OutboxBacklog } from '../../../common/metrics/metrics';
import { IntegrationEventFeed } from '../../../common/outbox/integration-events';
import { WebhookDelivery, WebhookEndpoint, WebhookEventType } from '../domain/webhook-events';
import { ClaimedDelivery, EndpointPatch, Page, RecordedAttempt, WebhookDeliveryQueue, WebhookEndpointRepository } from '../domain/webhook.repository';

const BACKLOG_COUNT_BOUND = 100_000;

type Row = Record<string, any>;
const date = (v: unknown): Date => (v instanceof Date ? v : new Date(String(v)));
const dateOrNull = (v: unknown): Date | null => (v === null || v === undefined ? null : date(v));
const array = (v: unknown): string[] => (Array.isArray(v) ? v : String(v).replace(/^\{|\}$/g, '').split(',').filter(Boolean));

function toEndpoint(r: Row): WebhookEndpoint {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    url: r.url,
    events: array(r.events) as WebhookEventType[],
    description: r.description ?? null,
    enabled: r.enabled === true || r.enabled === 't',
    secretVersion: Number(r.secret_version),
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
  };
}

function toDelivery(r: Row): WebhookDelivery {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    endpointId: r.endpoint_id,
    eventType: r.event_type,
    objectId: r.object_id,
    status: r.status,
    attempts: Number(r.attempts),
    lastResponseStatus: r.last_response_status === null || r.last_response_status === undefined ? null : Number(r.last_response_status),
    lastError: r.last_error ?? null,
    lastResponseExcerpt: r.last_response_excerpt ?? null,
    nextAttemptAt: dateOrNull(r.next_attempt_at),
    createdAt: date(r.created_at),
    deliveredAt: dateOrNull(r.delivered_at),
  };
}

/**
 * The webhooks module's tables (webhook_endpoints, webhook_deliveries); nobody else reads or
 * writes them. Integration events come from the outbox through `IntegrationEventFeed`.
 * Statements run on the unit of work's manager (a command's transaction, when there is one).
 */
@Injectable()
export class WebhookTypeormRepository implements WebhookEndpointRepository, WebhookDeliveryQueue {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly feed: IntegrationEventFeed,
  ) {}

  private q(sql: string, params: unknown[] = []): Promise<Row[]> {
    return queryRows<Row>(this.uow.manager, sql, params);
  }

  async insert(e: WebhookEndpoint, sealedSecret: string): Promise<void> {
    await this.q(
      `INSERT INTO webhook_endpoints (id, tenant_id, url, events, description, enabled, secret_ciphertext, secret_version, created_at, updated_at)
       VALUES ($1, $2, $3, $4::text[], $5, $6, $7, $8, $9, $9)`,
      [e.id, e.tenantId, e.url, e.events, e.description, e.enabled, sealedSecret, e.secretVersion, e.createdAt],
    );
  }

  async list(tenantId: string, after: string | undefined, limit: number): Promise<Page<WebhookEndpoint>> {
    const rows = await this.q(
      `SELECT * FROM webhook_endpoints WHERE tenant_id = $1 AND ($2::text IS NULL OR id > $2) ORDER BY id LIMIT $3`,
      [tenantId, after ?? null, limit + 1],
    );
    return { items: rows.slice(0, limit).map(toEndpoint), hasMore: rows.length > limit };
  }

  async find(tenantId: string, id: string): Promise<WebhookEndpoint | null> {
    const [r] = await this.q(`SELECT * FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
    return r ? toEndpoint(r) : null;
  }

  async sealedSecret(tenantId: string, id: string): Promise<{ sealedSecret: string; secretVersion: number } | null> {
    const [r] = await this.q(`SELECT secret_ciphertext, secret_version FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
    return r ? { sealedSecret: r.secret_ciphertext as string, secretVersion: Number(r.secret_version) } : null;
  }

  async update(tenantId: string, id: string, patch: EndpointPatch): Promise<WebhookEndpoint | null> {
    const [r] = await this.q(
      `UPDATE webhook_endpoints SET
         url = COALESCE($3, url),
         events = COALESCE($4::text[], events),
         description = CASE WHEN $5::boolean THEN $6 ELSE description END,
         enabled = COALESCE($7, enabled),
         secret_ciphertext = COALESCE($8, secret_ciphertext),
         secret_version = secret_version + CASE WHEN $8::text IS NULL THEN 0 ELSE 1 END,
         updated_at = now()
       WHERE tenant_id = $1 AND id = $2 RETURNING *`,
      [
        tenantId,
        id,
        patch.url ?? null,
        patch.events ?? null,
        patch.description !== undefined,
        patch.description ?? null,
        patch.enabled ?? null,
        patch.sealedSecret ?? null,
      ],
    );
    return r ? toEndpoint(r) : null;
  }

  async delete(tenantId: string, id: string): Promise<boolean> {
    const rows = await this.q(`DELETE FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2 RETURNING id`, [tenantId, id]);
    return rows.length > 0;
  }

  async deliveries(tenantId: string, endpointId: string, after: string | undefined, limit: number): Promise<Page<WebhookDelivery>> {
    const rows = await this.q(
      `SELECT d.* FROM webhook_deliveries d
        WHERE d.tenant_id = $1 AND d.endpoint_id = $2
          AND ($3::text IS NULL OR (d.created_at, d.id) < (SELECT a.created_at, a.id FROM webhook_deliveries a WHERE a.id = $3 AND a.endpoint_id = $2))
        ORDER BY d.created_at DESC, d.id DESC LIMIT $4`,
      [tenantId, endpointId, after ?? null, limit + 1],
    );
    return { items: rows.slice(0, limit).map(toDelivery), hasMore: rows.length > limit };
  }

  fanOut(limit: number): Promise<number> {
    // The delivery's created_at is the event's: the retry window counts from the change.
    return this.feed.consume(
      limit,
      (_p, taken) => `queued AS (
        INSERT INTO webhook_deliveries (id, tenant_id, endpoint_id, event_type, object_id, status, next_attempt_at, created_at, updated_at)
        SELECT 'whevt_' || replace(gen_random_uuid()::text, '-', ''), t.tenant_id, e.id, t.type, t.object_id, 'pending', now(), t.occurred_at, now()
          FROM ${taken.name} t JOIN webhook_endpoints e ON e.tenant_id = t.tenant_id AND e.enabled AND t.type = ANY (e.events))`,
    );
  }

  async claimDue(limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    const rows = await this.q(
      `WITH due AS (
         SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= now()
          ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED)
       UPDATE webhook_deliveries d
          SET attempts = d.attempts + 1, next_attempt_at = now() + make_interval(secs => $2::double precision / 1000), updated_at = now()
         FROM due WHERE d.id = due.id
       RETURNING d.*`,
      [limit, leaseMs],
    );
    if (rows.length === 0) return [];
    const endpointIds = [...new Set(rows.map((r) => r.endpoint_id as string))];
    const eps = await this.q(`SELECT * FROM webhook_endpoints WHERE id = ANY($1::text[])`, [endpointIds]);
    const byId = new Map(eps.map((r) => [r.id as string, { ...toEndpoint(r), sealedSecret: r.secret_ciphertext as string }]));
    return rows.map((r) => ({ delivery: toDelivery(r), endpoint: byId.get(r.endpoint_id) ?? null }));
  }

  async recordAttempts(attempts: RecordedAttempt[]): Promise<void> {
    if (attempts.length === 0) return;
    const rows = attempts.map(({ id, attempts: n, outcome: o }) => ({
      id,
      attempts: n,
      status: o.status,
      response_status: o.responseStatus,
      error: o.error,
      excerpt: o.excerpt,
      next_attempt_at: o.nextAttemptAt?.toISOString() ?? null,
    }));
    await this.q(
      `UPDATE webhook_deliveries d
          SET status = x.status, last_response_status = x.response_status, last_error = x.error, last_response_excerpt = x.excerpt,
              next_attempt_at = x.next_attempt_at, delivered_at = CASE WHEN x.status = 'delivered' THEN now() ELSE d.delivered_at END, updated_at = now()
         FROM jsonb_to_recordset($1::jsonb) AS x(id text, attempts integer, status text, response_status integer, error text, excerpt text, next_attempt_at timestamptz)
        WHERE d.id = x.id AND d.attempts = x.attempts AND d.status = 'pending'`,
      [toJsonb(rows)],
    );
  }

  async backlog(): Promise<OutboxBacklog> {
    const [r] = await this.q(
      `SELECT (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries WHERE status = 'pending' LIMIT $1) q) AS n,
              (SELECT min(created_at) FROM webhook_deliveries WHERE status = 'pending') AS oldest`,
      [BACKLOG_COUNT_BOUND],
    );
    const n = Number(r?.n ?? 0);
    const oldest = r?.oldest ? date(r.oldest).getTime() : NaN;
    return { rows: n, oldestAgeSeconds: n > 0 && Number.isFinite(oldest) ? Math.max(0, (Date.now() - oldest) / 1000) : 0 };
  }
}
