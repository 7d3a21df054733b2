import { Injectable } from '@nestjs/common';
import { toJsonb } from '../../../common/database/jsonb';
import { queryRows } from '../../../common/database/sql';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { OutboxBacklog } from '../../../common/metrics/metrics';
import { IntegrationEventFeed } from '../../../common/outbox/integration-events';
import { EndpointPolicy, WebhookDelivery, WebhookEndpoint, WebhookEventType } from '../domain/webhook-events';
import { ClaimedDelivery, EndpointPatch, Page, RecordedAttempt, WebhookDeliveryQueue, WebhookEndpointRepository } from '../domain/webhook.repository';

const BACKLOG_COUNT_BOUND = 100_000;
/** Where a consecutive-failure count stops growing (it only indexes the policy tables). */
const FAILURES_BOUND = 1_000_000;

/**
 * Ends the pending deliveries of the disabled endpoints `endpoints` selects (a subquery of ids)
 * that are not in flight: `failed`, endpoint_disabled, attempts as they were (a CTE body).
 * SKIP LOCKED: a row whose outcome is being written right now is left to the claim's next sweep
 * (never waits on it, so the endpoint row this statement may hold cannot deadlock with it).
 */
function endDisabledDeliveries(endpoints: string): string {
  return `UPDATE webhook_deliveries d
       SET status = 'failed', last_error = 'endpoint_disabled', last_response_status = NULL, last_response_excerpt = NULL,
           next_attempt_at = NULL, lease_until = NULL, updated_at = now()
     WHERE d.id IN (SELECT s.id FROM webhook_deliveries s
                     WHERE s.endpoint_id IN (${endpoints}) AND s.status = 'pending' AND (s.lease_until IS NULL OR s.lease_until <= now())
                     FOR UPDATE SKIP LOCKED)
    RETURNING d.id`;
}

/**
 * Claims the deliveries whose ids the CTE `source` selects: counts the attempt and leases the row
 * for `leaseMs` (a parameter reference such as `$2`), moving `next_attempt_at` past the lease;
 * returns the rows (a CTE body, for `claimDue` and the handoff of `recordAttempts`).
 */
function leaseClaimed(source: string, leaseMs: string): string {
  return `UPDATE webhook_deliveries d
       SET attempts = d.attempts + 1, next_attempt_at = now() + make_interval(secs => ${leaseMs}::double precision / 1000),
           lease_until = now() + make_interval(secs => ${leaseMs}::double precision / 1000), updated_at = now()
      FROM ${source} WHERE d.id = ${source}.id
    RETURNING d.*`;
}

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

/**
 * The tail of a statement whose CTE `claimed` returns claimed delivery rows: each with its
 * endpoint's columns (`ep_*`, read in the same statement rather than one more round trip).
 */
const CLAIMED_WITH_ENDPOINT = `SELECT c.*, e.id AS ep_id, e.tenant_id AS ep_tenant_id, e.url AS ep_url, e.events AS ep_events, e.description AS ep_description,
              e.enabled AS ep_enabled, e.secret_ciphertext AS ep_secret_ciphertext, e.secret_version AS ep_secret_version,
              e.created_at AS ep_created_at, e.updated_at AS ep_updated_at
         FROM claimed c LEFT JOIN webhook_endpoints e ON e.id = c.endpoint_id`;

function toClaimed(r: Row): ClaimedDelivery {
  const endpoint =
    r.ep_id === null || r.ep_id === undefined
      ? null
      : {
          ...toEndpoint({
            id: r.ep_id,
            tenant_id: r.ep_tenant_id,
            url: r.ep_url,
            events: r.ep_events,
            description: r.ep_description,
            enabled: r.ep_enabled,
            secret_version: r.ep_secret_version,
            created_at: r.ep_created_at,
            updated_at: r.ep_updated_at,
          }),
          sealedSecret: r.ep_secret_ciphertext as string,
        };
  return { delivery: toDelivery(r), endpoint };
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

  async list(tenantId: string, after: string | undefined, limit: number, order: 'asc' | 'desc' = 'asc'): Promise<Page<WebhookEndpoint>> {
    const [op, dir] = order === 'asc' ? ['>', 'ASC'] : ['<', 'DESC'];
    const rows = await this.q(
      `SELECT * FROM webhook_endpoints WHERE tenant_id = $1 AND deleted_at IS NULL AND ($2::text IS NULL OR id ${op} $2) ORDER BY id ${dir} LIMIT $3`,
      [tenantId, after ?? null, limit + 1],
    );
    return { items: rows.slice(0, limit).map(toEndpoint), hasMore: rows.length > limit };
  }

  async find(tenantId: string, id: string): Promise<WebhookEndpoint | null> {
    const [r] = await this.q(`SELECT * FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`, [tenantId, id]);
    return r ? toEndpoint(r) : null;
  }

  async subscribed(tenantId: string, type: string): Promise<boolean> {
    const [r] = await this.q(
      `SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE tenant_id = $1 AND enabled AND deleted_at IS NULL AND $2 = ANY (events)) AS yes`,
      [tenantId, type],
    );
    return r?.yes === true;
  }

  async sealedSecret(tenantId: string, id: string): Promise<{ sealedSecret: string; secretVersion: number } | null> {
    const [r] = await this.q(`SELECT secret_ciphertext, secret_version FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`, [tenantId, id]);
    return r ? { sealedSecret: r.secret_ciphertext as string, secretVersion: Number(r.secret_version) } : null;
  }

  async update(tenantId: string, id: string, patch: EndpointPatch): Promise<WebhookEndpoint | null> {
    const [r] = await this.q(
      `WITH e AS (UPDATE webhook_endpoints SET
         url = COALESCE($3, url),
         events = COALESCE($4::text[], events),
         description = CASE WHEN $5::boolean THEN $6 ELSE description END,
         enabled = COALESCE($7, enabled),
         secret_ciphertext = COALESCE($8, secret_ciphertext),
         secret_version = secret_version + CASE WHEN $8::text IS NULL THEN 0 ELSE 1 END,
         updated_at = now()
       WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING *),
       ended AS (${endDisabledDeliveries(`SELECT e.id FROM e WHERE $7::boolean IS FALSE`)})
       SELECT * FROM e`,
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
    // Kept, not deleted: its pending deliveries end `failed` (endpoint_disabled) rather than vanish.
    const rows = await this.q(
      `WITH e AS (UPDATE webhook_endpoints SET deleted_at = now(), enabled = false, secret_ciphertext = '', updated_at = now()
                   WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING id),
       ended AS (${endDisabledDeliveries('SELECT e.id FROM e')})
       SELECT id FROM e`,
      [tenantId, id],
    );
    return rows.length > 0;
  }

  async deliveries(tenantId: string, endpointId: string, after: string | undefined, limit: number, order: 'asc' | 'desc' = 'desc'): Promise<Page<WebhookDelivery>> {
    const [op, dir] = order === 'asc' ? ['>', 'ASC'] : ['<', 'DESC'];
    const rows = await this.q(
      `SELECT d.* FROM webhook_deliveries d
        WHERE d.tenant_id = $1 AND d.endpoint_id = $2
          AND ($3::text IS NULL OR (d.created_at, d.id) ${op} (SELECT a.created_at, a.id FROM webhook_deliveries a WHERE a.id = $3 AND a.endpoint_id = $2))
        ORDER BY d.created_at ${dir}, d.id ${dir} LIMIT $4`,
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

  async claimDue(limit: number, leaseMs: number, policy: EndpointPolicy): Promise<ClaimedDelivery[]> {
    // pending: the endpoints with pending deliveries, one index probe each (a loose scan of
    // webhook_deliveries_pending_by_endpoint, not a pass over a hanging endpoint's backlog).
    // ep: those with something to do, locked (SKIP LOCKED) so that two nodes do not count the
    // same endpoint's free slots at once. open: each one's free slots - its policy's cap minus its
    // leases still running on any node. picked: per endpoint its earliest due, up to its free
    // slots; chosen: rank 1 of every endpoint first, then rank 2, ... up to `limit`.
    const rows = await this.q(
      `WITH RECURSIVE pending(endpoint_id) AS (
         (SELECT endpoint_id FROM webhook_deliveries WHERE status = 'pending' ORDER BY endpoint_id LIMIT 1)
         UNION ALL
         SELECT (SELECT d.endpoint_id FROM webhook_deliveries d WHERE d.status = 'pending' AND d.endpoint_id > p.endpoint_id ORDER BY d.endpoint_id LIMIT 1)
           FROM pending p WHERE p.endpoint_id IS NOT NULL),
       ep AS (
         SELECT e.id, e.enabled, e.consecutive_failures FROM webhook_endpoints e JOIN pending p ON p.endpoint_id = e.id
          WHERE NOT e.enabled
             OR ((e.backoff_until IS NULL OR e.backoff_until <= now())
                 AND EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.next_attempt_at <= now()))
          FOR NO KEY UPDATE OF e SKIP LOCKED),
       ended AS (${endDisabledDeliveries('SELECT ep.id FROM ep WHERE NOT ep.enabled')}),
       open AS (
         SELECT ep.id, ($3::int[])[least(ep.consecutive_failures, cardinality($3::int[]) - 1) + 1]
                       - (SELECT count(*) FROM webhook_deliveries l WHERE l.endpoint_id = ep.id AND l.lease_until > now())::int AS free
           FROM ep WHERE ep.enabled),
       picked AS (
         SELECT x.id, x.next_attempt_at, row_number() OVER (PARTITION BY open.id ORDER BY x.next_attempt_at) AS rank
           FROM open CROSS JOIN LATERAL (
             SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
              WHERE d.endpoint_id = open.id AND d.status = 'pending' AND d.next_attempt_at <= now()
              ORDER BY d.next_attempt_at LIMIT greatest(open.free, 0)
              FOR UPDATE SKIP LOCKED) x),
       chosen AS (SELECT id FROM picked ORDER BY rank, next_attempt_at LIMIT $1),
       claimed AS (${leaseClaimed('chosen', '$2')})
       ${CLAIMED_WITH_ENDPOINT}`,
      [limit, leaseMs, policy.inFlightByFailures],
    );
    return rows.map(toClaimed);
  }

  async recordAttempts(attempts: RecordedAttempt[], policy: EndpointPolicy, leaseMs?: number): Promise<ClaimedDelivery[]> {
    if (attempts.length === 0) return [];
    const rows = attempts.map(({ id, attempts: n, outcome: o, health, notStarted, handoff }) => ({
      health,
      not_started: notStarted === true,
      handoff: handoff === true && leaseMs !== undefined,
      id,
      attempts: n,
      status: o.status,
      response_status: o.responseStatus,
      error: o.error,
      excerpt: o.excerpt,
      next_attempt_at: o.nextAttemptAt?.toISOString() ?? null,
    }));
    // The rows are found by primary key (`id = ANY`): joined only to the recordset, the planner
    // (100 rows assumed for it, and a stale estimate of the pending rows) hashed every pending
    // delivery for each batch - 3.5 ms a statement with a 10,000 backlog (bench B6).
    // Health counts only the outcomes written (an attempt superseded by a later claim says nothing);
    // a 2xx in the batch resets the endpoint (the order within a batch is not known). A healthy
    // endpoint's row is not written at all: the claim skips a locked endpoint row (SKIP LOCKED),
    // so a write per batch would make every other claim miss it (bench B6: 21 instead of ~180/s).
    // give/successor/claimed: the handoff (see the port) - per endpoint as many of its earliest due
    // deliveries as it has answered attempts marked `handoff` here, if it is enabled; no count
    // of leases is needed (one ends for each one taken) and so no lock on the endpoint row.
    const claimed = await this.q(
      `WITH done AS (
         UPDATE webhook_deliveries d
            SET status = x.status, attempts = d.attempts - CASE WHEN x.not_started THEN 1 ELSE 0 END, last_response_status = x.response_status, last_error = x.error, last_response_excerpt = x.excerpt,
                next_attempt_at = x.next_attempt_at, lease_until = NULL,
                delivered_at = CASE WHEN x.status = 'delivered' THEN now() ELSE d.delivered_at END, updated_at = now()
           FROM jsonb_to_recordset($1::jsonb) AS x(id text, attempts integer, status text, response_status integer, error text, excerpt text, next_attempt_at timestamptz, health text, not_started boolean, handoff boolean)
          WHERE d.id = ANY ($4::text[]) AND d.id = x.id AND d.attempts = x.attempts AND d.status = 'pending'
         RETURNING d.endpoint_id, x.health, x.handoff),
       h AS (
         SELECT endpoint_id, bool_or(health = 'answered') AS answered, count(*) FILTER (WHERE health = 'failed')::int AS failed
           FROM done WHERE health IS NOT NULL GROUP BY endpoint_id),
       n AS (
         SELECT e.id, CASE WHEN h.answered THEN 0 ELSE least(e.consecutive_failures + h.failed, $3::int) END AS failures
           FROM webhook_endpoints e JOIN h ON h.endpoint_id = e.id),
       health AS (
         UPDATE webhook_endpoints e
            SET consecutive_failures = n.failures,
                backoff_until = CASE WHEN n.failures = 0 THEN NULL
                                     ELSE now() + make_interval(secs => ($2::int[])[least(n.failures, cardinality($2::int[]) - 1) + 1]::double precision / 1000) END
           FROM n WHERE e.id = n.id AND (n.failures > 0 OR e.consecutive_failures > 0)
         RETURNING e.id),
       give AS (
         SELECT done.endpoint_id, count(*)::int AS k FROM done JOIN webhook_endpoints ge ON ge.id = done.endpoint_id AND ge.enabled
          WHERE done.handoff GROUP BY done.endpoint_id),
       successor AS (
         SELECT x.id FROM give CROSS JOIN LATERAL (
           SELECT d.id FROM webhook_deliveries d
            WHERE d.endpoint_id = give.endpoint_id AND d.status = 'pending' AND d.next_attempt_at <= now()
            ORDER BY d.next_attempt_at LIMIT give.k
            FOR UPDATE SKIP LOCKED) x),
       claimed AS (${leaseClaimed('successor', '$5')})
       ${CLAIMED_WITH_ENDPOINT}`,
      [toJsonb(rows), policy.backoffMsByFailures, FAILURES_BOUND, rows.map((r) => r.id), leaseMs ?? 0],
    );
    return claimed.map(toClaimed);
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
