import { Injectable, Logger, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { toJsonb } from '../database/jsonb';
import { queryRows } from '../database/sql';
import { GuardedRider, StatementParams } from '../database/statement';
import { UnitOfWork } from '../database/unit-of-work';
import { Metrics, OutboxBacklog } from '../metrics/metrics';
import { IntegrationEvent, IntegrationEventFeed, IntegrationEventOutbox, TakenEvents, TakenEventsConsumer } from './integration-events';

const TAKEN: TakenEvents = { name: 'taken' };
const BACKLOG_COUNT_BOUND = 100_000;

/** The `integration_events` table (migration 1764497700000): the only code that reads or writes it. */
@Injectable()
export class PgIntegrationEvents extends IntegrationEventFeed implements IntegrationEventOutbox, OnApplicationBootstrap {
  private readonly logger = new Logger('IntegrationEvents');

  constructor(
    private readonly uow: UnitOfWork,
    @Optional() private readonly metrics?: Metrics,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    this.metrics?.setOutboxSource('integration_events', () =>
      this.backlog().catch((err: Error) => {
        this.logger.warn(`metrics: integration event backlog not refreshed: ${err.message}`);
        return null;
      }),
    );
  }

  afterGuard(events: readonly IntegrationEvent[]): GuardedRider {
    if (events.length === 0) throw new Error('an outbox rider needs events');
    return (p: StatementParams, guard) => {
      const rows = events.map((e) => {
        const [tenant, type, object, payload] = p.add(e.tenantId, e.type, e.objectId, toJsonb(e.payload));
        return `(${tenant}::text, ${type}::text, ${object}::text, ${payload}::jsonb)`;
      });
      return `integration_events_insert AS (
        INSERT INTO integration_events (tenant_id, type, object_id, payload)
        SELECT v.tenant_id, v.type, v.object_id, v.payload FROM (VALUES ${rows.join(', ')}) v(tenant_id, type, object_id, payload)
         WHERE ${guard.matched})`;
    };
  }

  async consume(limit: number, consumer: TakenEventsConsumer): Promise<number> {
    const p = new StatementParams();
    const [n] = p.add(limit);
    const taken = `${TAKEN.name} AS (
      DELETE FROM integration_events WHERE id IN (SELECT id FROM integration_events ORDER BY id LIMIT ${n} FOR UPDATE SKIP LOCKED)
      RETURNING id, tenant_id, type, object_id, payload, occurred_at)`;
    const rest = consumer(p, TAKEN);
    const rows = await queryRows<{ n: string | number }>(
      this.uow.manager,
      `WITH ${taken}, ${rest} SELECT count(*) AS n FROM ${TAKEN.name}`,
      p.values,
    );
    return Number(rows[0]?.n ?? 0);
  }

  async backlog(): Promise<OutboxBacklog> {
    const rows = await queryRows<{ n: string | number; oldest: Date | string | null }>(
      this.uow.manager,
      `SELECT (SELECT count(*) FROM (SELECT 1 FROM integration_events LIMIT $1) q) AS n, (SELECT occurred_at FROM integration_events ORDER BY id LIMIT 1) AS oldest`,
      [BACKLOG_COUNT_BOUND],
    );
    const n = Number(rows[0]?.n ?? 0);
    const oldest = rows[0]?.oldest ? new Date(rows[0].oldest).getTime() : NaN;
    return { rows: n, oldestAgeSeconds: n > 0 && Number.isFinite(oldest) ? Math.max(0, (Date.now() - oldest) / 1000) : 0 };
  }
}
