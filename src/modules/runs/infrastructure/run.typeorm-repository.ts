import { Injectable } from '@nestjs/common';
import { queryRows } from '../../../common/database/sql';
import { Principal } from '../../../common/auth/principal';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { ConcurrencyConflict } from '../../../common/errors/domain-error';
import { invalidCursor, keysetPage, SortOrder } from '../../../common/http/pagination';
import { AuditTrail } from '../../audit/domain/audit-trail';
import { EventStore, EventStreamOwner, NewRunEvent } from '../../events/domain/run-event';
import { Run } from '../domain/run.aggregate';
import { RunRepository } from '../domain/run.repository';
import { TERMINAL_STATUSES } from '../domain/run-status';
import { runToDomain, runToRow } from './run.mapper';
import { RunOrmEntity } from './run.orm-entity';

const TERMINAL_SQL = TERMINAL_STATUSES.map((s) => `'${s}'`).join(',');

@Injectable()
export class RunTypeormRepository extends RunRepository {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly events: EventStore,
    private readonly audit: AuditTrail,
  ) {
    super();
  }

  /** Appends run events and queues their audit records (chained in batches after commit, off the hot path). */
  private async appendEvents(owner: EventStreamOwner, events: NewRunEvent[]): Promise<void> {
    if (events.length === 0) return;
    const stored = await this.events.append(owner, events);
    await this.audit.recordRunEvents(stored);
  }

  private get repo() {
    return this.uow.manager.getRepository(RunOrmEntity);
  }

  async insert(run: Run): Promise<void> {
    const events = run.pullEvents();
    await this.uow.run(async () => {
      await this.repo.insert(runToRow(run) as never);
      await this.appendEvents(run.owner, events);
    });
    run.markSaved();
  }

  async save(run: Run): Promise<void> {
    if (!run.hasChanges) return;
    const events = run.pullEvents();
    const { id, tenantId, subjectId, sessionId, createdAt, leaseOwner, leaseExpiresAt, ...rest } = runToRow(run);
    // The lease columns belong to the heartbeat; a save only clears them (wait, finish, release).
    const changes = leaseOwner === null ? { ...rest, leaseOwner: null, leaseExpiresAt: null } : rest;
    void leaseExpiresAt;
    void tenantId;
    void subjectId;
    void sessionId;
    void createdAt;
    await this.uow.run(async () => {
      const result = await this.repo
        .createQueryBuilder()
        .update(RunOrmEntity)
        .set(changes as never)
        .where('id = :id AND version = :expected', { id, expected: run.expectedVersion })
        .execute();
      if (result.affected !== 1) throw new ConcurrencyConflict('run', id, run.expectedVersion);
      await this.appendEvents(run.owner, events);
    });
    run.markSaved();
  }

  async findById(id: string): Promise<Run | null> {
    const row = await this.repo.findOne({ where: { id } });
    return row ? runToDomain(row) : null;
  }

  async findActiveInSession(sessionId: string): Promise<string | null> {
    const rows: Array<{ id: string }> = await this.uow.manager.query(
      `SELECT id FROM runs WHERE session_id = $1 AND status NOT IN (${TERMINAL_SQL}) ORDER BY created_at, id LIMIT 1`,
      [sessionId],
    );
    return rows[0]?.id ?? null;
  }

  async listBySession(principal: Principal, sessionId: string, page: { after?: string; limit: number; order: SortOrder }) {
    const scope = () => this.repo.createQueryBuilder('r').where('r.session_id = :sessionId', { sessionId });
    let cursor: { createdAt: Date; id: string } | null = null;
    if (page.after !== undefined) {
      const row = await scope().andWhere('r.id = :after', { after: page.after }).getOne();
      if (!row) throw invalidCursor(page.after);
      cursor = { createdAt: row.createdAt, id: row.id };
    }
    void principal;
    const { rows, hasMore } = await keysetPage(scope(), 'r', cursor, page.order, page.limit);
    return { items: rows.map(runToDomain), hasMore };
  }

  async claimNext(nodeId: string, leaseMs: number): Promise<Run | null> {
    const rows = await queryRows<{ id: string }>(
      this.uow.manager,
      `UPDATE runs SET lease_owner = $1, lease_expires_at = now() + ($2 || ' milliseconds')::interval, version = version + 1
        WHERE id = (
          SELECT r.id FROM runs r
           WHERE (
                   (r.status = 'queued'
                    AND r.queue_expires_at > now()
                    AND NOT EXISTS (SELECT 1 FROM runs e WHERE e.session_id = r.session_id
                                     AND e.status NOT IN (${TERMINAL_SQL})
                                     AND (e.created_at, e.id) < (r.created_at, r.id)))
                   OR (r.status IN ('running', 'cancelling'))
                 )
             AND (r.lease_expires_at IS NULL OR r.lease_expires_at < now())
           ORDER BY r.created_at, r.id
           FOR UPDATE SKIP LOCKED
           LIMIT 1)
        RETURNING id`,
      [nodeId, String(leaseMs)],
    );
    if (rows.length === 0) return null;
    return this.findById(rows[0].id);
  }

  async heartbeat(runId: string, nodeId: string, leaseMs: number) {
    const rows = await queryRows<{ status: string; cancel_requested_at: Date | null }>(
      this.uow.manager,
      `UPDATE runs SET lease_expires_at = now() + ($3 || ' milliseconds')::interval
        WHERE id = $1 AND lease_owner = $2 RETURNING status, cancel_requested_at`,
      [runId, nodeId, String(leaseMs)],
    );
    if (rows.length === 0) return null;
    return { status: rows[0].status, cancelRequested: rows[0].cancel_requested_at !== null };
  }

  async findExpiredQueued(limit: number): Promise<string[]> {
    const rows: Array<{ id: string }> = await this.uow.manager.query(
      `SELECT id FROM runs WHERE status = 'queued' AND queue_expires_at <= now() ORDER BY created_at LIMIT $1`,
      [limit],
    );
    return rows.map((r) => r.id);
  }

  async releaseLeases(nodeId: string): Promise<number> {
    const rows = await queryRows<{ id: string }>(
      this.uow.manager,
      `UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = $1 RETURNING id`,
      [nodeId],
    );
    return rows.length;
  }
}
