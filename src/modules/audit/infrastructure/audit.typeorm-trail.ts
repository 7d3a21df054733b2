import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { Metrics, OutboxBacklog } from '../../../common/metrics/metrics';
import { DbPriority } from '../../../common/database/db-priority';
import { toJsonb } from '../../../common/database/jsonb';
import { EntityManager } from 'typeorm';
import { BatchWrite, UnitOfWork } from '../../../common/database/unit-of-work';
import { newId } from '../../../common/ids/ids';
import type { RunEventType } from '../../events/domain/run-event';
import { AuditChainKey, AuditRecord, auditRecordHash, ChainHead, GENESIS_HASH, jsonSafe, NewAuditRecord } from '../domain/audit-record';
import { AuditTrail, runEventToAuditRecord } from '../domain/audit-trail';
import { AUDIT_COLUMNS, auditRecordToParams } from './audit-row';
import { AuditTypeormCheckpointer } from './audit.typeorm-checkpointer';
import { IntegrationEventOutbox } from '../../../common/outbox/integration-events';
import { QueryBus } from '@nestjs/cqrs';
import { HasSubscribersQuery } from '../../../common/outbox/has-subscribers.query';
import { guardedStatement } from '../../../common/database/statement';

/** Rows per INSERT statement (PostgreSQL allows 65535 parameters per statement). */
const ROWS_PER_INSERT = 1000;
/** Queued records chained per transaction. */
const OUTBOX_BATCH = 2000;
const OUTBOX_RETRY_MS = 1000;
/**
 * How long a drain waits after the first record is queued, so the records of many transactions
 * (all runs and requests of this node) are chained by one drain transaction: under load that is a
 * few drains per second instead of one per committed write (profile of B1: the per-commit drain
 * was ~40% of the SQL statements of a run). Readers flush before reading, so they never wait for it.
 */
const OUTBOX_DRAIN_DELAY_MS = 25;
/** How often, at most, a tenant's moved chain head is written to the log (the external anchor; see ARCHITECTURE). */
const HEAD_ANCHOR_EVERY_MS = 60_000;
/** The backlog gauge counts at most this many queued rows (a bounded scrape even when far behind). */
const BACKLOG_COUNT_BOUND = 100_000;
const BACKLOG_QUERY_TIMEOUT_MS = 1000;

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms).unref())]);
}

/**
 * A queued record as stored in `audit_outbox.record`: a record written by `enqueue` (JSON: the
 * time as an ISO string), or a run event row queued by the `run_events_audit` trigger.
 */
type QueuedRecord = (Omit<NewAuditRecord, 'occurredAt'> & { occurredAt: string; run_event?: undefined }) | { run_event: RunEventRow };

interface RunEventRow {
  id: string;
  tenant_id: string;
  subject_id: string;
  session_id: string;
  run_id: string;
  sequence: number;
  session_sequence: number;
  type: string;
  data: Record<string, unknown>;
  occurred_at: string;
}

function fromQueue(q: QueuedRecord): NewAuditRecord {
  if (q.run_event) {
    const e = q.run_event;
    return runEventToAuditRecord({
      id: e.id,
      tenantId: e.tenant_id,
      subjectId: e.subject_id,
      sessionId: e.session_id,
      runId: e.run_id,
      sequence: Number(e.sequence),
      sessionSequence: Number(e.session_sequence),
      type: e.type as RunEventType,
      occurredAt: new Date(e.occurred_at),
      data: e.data,
    });
  }
  return { ...q, occurredAt: new Date(q.occurredAt) };
}

/** A chain head whose tag does not verify: the drain does not extend it. */
class ChainHeadRefused extends Error {
  constructor(
    readonly tenantId: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The audit trail on PostgreSQL. Every record is queued in `audit_outbox` first: a run event's by
 * the `run_events_audit` trigger in the statement that inserts the event (see its migration), any
 * other record (a request's) by `enqueue` (one INSERT) - no chain lock, so writers of one tenant
 * do not serialise on the head row through their commit. A drainer, started shortly after commit
 * (`OUTBOX_DRAIN_DELAY_MS`, so one drain serves many commits), or `flush`, moves them into the
 * chain in batches, per tenant, one transaction per batch: make sure the chain head row exists
 * (`INSERT ... ON CONFLICT DO NOTHING`), lock it (`SELECT ... FOR UPDATE`), take the tenant's
 * queued rows in id order, chain them onto the head, insert them with multi-row INSERTs, move the
 * head and delete the queued rows. The head lock serialises drainers of one tenant, so `seq` is
 * gap-free and a record is chained exactly once, on any node; other tenants' chains are
 * independent. Queued rows left by a crash are chained at the next start (or by any other node).
 */
@Injectable()
export class AuditTypeormTrail extends AuditTrail implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('AuditTrail');
  private draining: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private delayTimer: NodeJS.Timeout | null = null;
  private readonly anchoredAt = new Map<string, number>();
  private readonly refusedAt = new Map<string, number>();

  constructor(
    private readonly uow: UnitOfWork,
    private readonly key: AuditChainKey,
    @Optional() private readonly metrics?: Metrics,
    @Optional() private readonly checkpointer?: AuditTypeormCheckpointer,
    @Optional() private readonly events?: IntegrationEventOutbox,
    @Optional() private readonly queries?: QueryBus,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    this.metrics?.setOutboxSource('audit', () =>
      withTimeout(this.backlog(), BACKLOG_QUERY_TIMEOUT_MS).catch((err: Error) => {
        this.logger.warn(`metrics: audit outbox backlog not refreshed: ${err.message}`);
        return null;
      }),
    );
    this.kick();
  }

  /** What waits to be chained: queued rows (counted up to a bound) and the age of the oldest. Two index reads. */
  async backlog(): Promise<OutboxBacklog> {
    const rows: Array<{ n: string; oldest: string | null }> = await this.uow.dataSource.query(
      `SELECT (SELECT count(*) FROM (SELECT 1 FROM audit_outbox LIMIT $1) q) AS n,
              (SELECT COALESCE(record->>'occurredAt', record->'run_event'->>'occurred_at') FROM audit_outbox ORDER BY id LIMIT 1) AS oldest`,
      [BACKLOG_COUNT_BOUND],
    );
    const n = Number(rows[0]?.n ?? 0);
    const oldest = rows[0]?.oldest ? Date.parse(rows[0].oldest) : NaN;
    return { rows: n, oldestAgeSeconds: n > 0 && Number.isFinite(oldest) ? Math.max(0, (Date.now() - oldest) / 1000) : 0 };
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.delayTimer) clearTimeout(this.delayTimer);
    // Best effort: what stays queued is chained by the next node that starts or drains.
    await Promise.race([this.draining?.catch(() => undefined), new Promise((r) => setTimeout(r, 3000).unref())]);
  }

  async enqueue(records: NewAuditRecord[]): Promise<void> {
    if (records.length === 0) return;
    // One statement: inside the caller's transaction when there is one, else on its own (autocommit).
    await this.uow.write(this.outboxInsert(records));
    this.uow.afterCommit(() => this.kickSoon());
  }

  enqueueWrite(records: NewAuditRecord[]): BatchWrite {
    // Called inside the unit of work that runs the write: chaining starts once it commits.
    this.uow.afterCommit(() => this.kickSoon());
    return this.outboxInsert(records);
  }

  private outboxInsert(records: NewAuditRecord[]): BatchWrite {
    const tenants = records.map((r) => r.tenantId);
    // toJsonb: every field, not only data, may carry what a request sent (a path id with U+0000).
    const rows = records.map((r) => toJsonb({ ...r, occurredAt: (r.occurredAt ?? new Date()).toISOString(), data: jsonSafe(r.data ?? {}) ?? {} }));
    return {
      ctes: (p) => {
        const [t, r] = p.add(tenants, rows);
        return `audit_enqueue AS (
          INSERT INTO audit_outbox (tenant_id, record)
          SELECT t, r FROM unnest(${t}::text[], ${r}::jsonb[]) WITH ORDINALITY AS u(t, r, n) ORDER BY n
        )`;
      },
    };
  }

  async flush(tenantId?: string): Promise<void> {
    await this.draining?.catch(() => undefined);
    if (tenantId === undefined) await this.drainAll();
    else await this.drainTenant(tenantId);
  }

  /** Starts a background drain in OUTBOX_DRAIN_DELAY_MS, unless one is already due. */
  private kickSoon(): void {
    if (this.stopped || this.delayTimer) return;
    this.delayTimer = setTimeout(() => {
      this.delayTimer = null;
      this.kick();
    }, OUTBOX_DRAIN_DELAY_MS);
    this.delayTimer.unref();
  }

  /** Starts a background drain (or asks the running one to go round once more). */
  private kick(): void {
    if (this.stopped) return;
    if (this.draining) {
      this.again = true;
      return;
    }
    this.again = false;
    // Chaining waits behind requests and run starts for a connection (records are already durable).
    this.draining = DbPriority.run('background', () => this.drainAll())
      .catch((err) => {
        this.logger.warn(`chaining queued audit records failed (retrying): ${(err as Error).message}`);
        if (!this.retryTimer && !this.stopped) {
          this.retryTimer = setTimeout(() => {
            this.retryTimer = null;
            this.kick();
          }, OUTBOX_RETRY_MS);
          this.retryTimer.unref();
        }
      })
      .finally(() => {
        this.draining = null;
        if (this.again) this.kickSoon();
      });
  }

  private async drainAll(): Promise<void> {
    const tenants: Array<{ tenant_id: string }> = await this.uow.dataSource.query(`SELECT DISTINCT tenant_id FROM audit_outbox ORDER BY tenant_id LIMIT 1000`);
    for (const { tenant_id: tenant } of tenants) await this.drainTenant(tenant);
  }

  /** Chains the tenant's queued records, a batch per transaction, until none is left (bounded). */
  private async drainTenant(tenantId: string): Promise<void> {
    // One `audit.recorded` event per record only while an endpoint wants them (asked once per drain: a few times a second at most).
    const siem = this.events && this.queries ? await this.queries.execute(new HasSubscribersQuery(tenantId, 'audit.recorded')) : false;
    for (let round = 0; round < 1000; round++) {
      let head: Omit<ChainHead, 'tag'> | null = null;
      let moved: number;
      try {
        moved = await this.uow.dataSource.transaction(async (m) => {
          let ids: string[] = [];
          head = await this.chainQueued(m, tenantId, siem, async () => {
            const rows: Array<{ id: string; record: QueuedRecord }> = await m.query(
              `SELECT id, record FROM audit_outbox WHERE tenant_id = $1 ORDER BY id LIMIT $2`,
              [tenantId, OUTBOX_BATCH],
            );
            ids = rows.map((r) => r.id);
            return rows.map((r) => fromQueue(r.record));
          });
          if (ids.length > 0) await m.query(`DELETE FROM audit_outbox WHERE id = ANY($1::bigint[])`, [ids]);
          return ids.length;
        });
      } catch (err) {
        if (!(err instanceof ChainHeadRefused)) throw err;
        // Not fatal for other tenants or for readers (verify reports the head); tried again at the next drain.
        this.refused(err);
        return;
      }
      if (head) {
        this.anchor(head);
        this.checkpointer?.noteChained(tenantId, (head as Omit<ChainHead, 'tag'>).lastSeq);
      }
      if (moved < OUTBOX_BATCH) return;
    }
  }

  /**
   * Chains what `load` returns onto the tenant's head, in order. `load` runs once the head is
   * locked (it reads the outbox under the lock, so concurrent drainers never chain a row twice).
   * A head whose tag does not verify (moved by someone without the key, or a node with another
   * key) is never extended: re-tagging it would make the tampering verify. The records stay queued
   * (nothing is lost) and verify reports the head.
   */
  private async chainQueued(m: EntityManager, tenantId: string, siem: boolean, load: () => Promise<NewAuditRecord[]>): Promise<Omit<ChainHead, 'tag'> | null> {
    const genesis = { tenantId, lastSeq: 0, lastHash: GENESIS_HASH, legacyUntil: 0, keyedUntil: 0 };
    // Creates the head if missing and locks it: one round trip (SECURITY DEFINER: the service's role may not UPDATE heads).
    const rows: Array<{ last_seq: string; last_hash: string; legacy_until: string; keyed_until: string; tag: string }> = await m.query(
      `SELECT last_seq, last_hash, legacy_until, keyed_until, tag FROM audit_chain_lock($1, $2)`,
      [tenantId, this.key.headTag(genesis)],
    );
    const head: ChainHead = {
      tenantId,
      lastSeq: Number(rows[0].last_seq),
      lastHash: rows[0].last_hash,
      legacyUntil: Number(rows[0].legacy_until),
      keyedUntil: Number(rows[0].keyed_until),
      tag: rows[0].tag,
    };
    if (!this.key.headIsAuthentic(head)) {
      throw new ChainHeadRefused(
        tenantId,
        `the audit chain head of tenant ${tenantId} (seq ${head.lastSeq}) does not verify with this node's AUDIT_HMAC_KEY (key id ${this.key.keyId}): ` +
          'it was changed without the key, or nodes use different keys; its records stay queued',
      );
    }
    const records = await load();
    if (records.length === 0) return null;
    let seq = head.lastSeq;
    let prevHash = head.lastHash;
    const now = new Date();
    const chained: AuditRecord[] = records.map((r) => {
      seq += 1;
      const body = {
        id: newId('aud'),
        tenantId,
        seq,
        occurredAt: new Date((r.occurredAt ?? now).getTime()),
        actorSubjectId: r.actorSubjectId ?? null,
        actorRole: r.actorRole ?? null,
        actorKeyId: r.actorKeyId ?? null,
        action: r.action,
        resourceType: r.resourceType ?? null,
        resourceId: r.resourceId ?? null,
        sessionId: r.sessionId ?? null,
        runId: r.runId ?? null,
        requestId: r.requestId ?? null,
        outcome: r.outcome ?? null,
        status: r.status ?? null,
        data: (jsonSafe(r.data ?? {}) ?? {}) as Record<string, unknown>,
      };
      // Public hash (anyone recomputes it from the export), keyed mac (only this service can make it).
      const hash = auditRecordHash(prevHash, body);
      const record: AuditRecord = { ...body, prevHash, hash, mac: this.key.recordMac(hash) };
      prevHash = hash;
      return record;
    });
    for (let i = 0; i < chained.length; i += ROWS_PER_INSERT) {
      const chunk = chained.slice(i, i + ROWS_PER_INSERT);
      // One statement: the records, and (riding on them) one `audit.recorded` integration event each, for the SIEM webhooks.
      const { sql, params } = guardedStatement({
        guard: (p) => {
          const tuples = chunk.map((r) => `(${p.add(...auditRecordToParams(r)).map((ph, k) => (k === 15 ? `${ph}::jsonb` : ph)).join(', ')})`);
          return `INSERT INTO audit_records (${AUDIT_COLUMNS}) VALUES ${tuples.join(', ')} RETURNING id`;
        },
        riders: siem && this.events ? [this.events.afterGuard(chunk.map((r) => ({ tenantId, type: 'audit.recorded', objectId: r.id, payload: { seq: r.seq } })))] : [],
      });
      await m.query(sql, params);
    }
    const moved = { tenantId, lastSeq: seq, lastHash: prevHash, legacyUntil: head.legacyUntil, keyedUntil: head.keyedUntil };
    const [advanced]: Array<{ ok: boolean }> = await m.query(`SELECT audit_chain_advance($1, $2, $3, $4) AS ok`, [
      tenantId,
      seq,
      prevHash,
      this.key.headTag(moved),
    ]);
    if (!advanced?.ok) throw new Error(`the audit chain head of tenant ${tenantId} did not move to seq ${seq}`);
    return moved;
  }

  /**
   * The cheap external anchor: the head, at most once a minute per tenant, in the log (which a
   * database writer does not control). A later head with a lower seq than a logged one, or another
   * hash at a logged seq, shows a replayed (rewound) head even where verify cannot.
   */
  private refused(err: ChainHeadRefused): void {
    const now = Date.now();
    if (now - (this.refusedAt.get(err.tenantId) ?? 0) < HEAD_ANCHOR_EVERY_MS) return;
    this.refusedAt.set(err.tenantId, now);
    this.logger.error(err.message);
  }

  private anchor(head: Omit<ChainHead, 'tag'>): void {
    const now = Date.now();
    if (now - (this.anchoredAt.get(head.tenantId) ?? 0) < HEAD_ANCHOR_EVERY_MS) return;
    this.anchoredAt.set(head.tenantId, now);
    this.logger.log(`audit chain head: tenant_id=${head.tenantId} seq=${head.lastSeq} hash=${head.lastHash} key_id=${this.key.keyId}`);
  }
}
