import { Injectable, OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { SessionWorkStatusSql, WorkStatus } from '../domain/work-status';
import { Principal } from '../../../common/auth/principal';
import { EntitySql } from '../../../common/database/entity-sql';
import { queryRows } from '../../../common/database/sql';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { ConcurrencyConflict } from '../../../common/errors/domain-error';
import { invalidCursor, keysetPage, SortOrder } from '../../../common/http/pagination';
import { Session } from '../domain/session.aggregate';
import { SessionRepository } from '../domain/session.repository';
import { sessionToDomain, sessionToRow } from './session.mapper';
import { SessionOrmEntity } from './session.orm-entity';

@Injectable()
export class SessionTypeormRepository extends SessionRepository implements OnModuleInit {
  private readonly sql: EntitySql<SessionOrmEntity>;
  private workStatusSql: SessionWorkStatusSql | null = null;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly ref: ModuleRef,
  ) {
    super();
    this.sql = new EntitySql(uow.dataSource, SessionOrmEntity);
  }

  onModuleInit(): void {
    // The runs module's SQL of a session's work status (none without it: every session is idle).
    try {
      this.workStatusSql = this.ref.get(SessionWorkStatusSql, { strict: false });
    } catch {
      this.workStatusSql = null;
    }
  }

  private workStatusOf(sessionId: string): string {
    return this.workStatusSql ? this.workStatusSql.expression(sessionId) : `'idle'`;
  }

  async workStatuses(ids: readonly string[]): Promise<Map<string, WorkStatus>> {
    if (ids.length === 0) return new Map();
    const rows: Array<{ id: string; ws: WorkStatus }> = await this.uow.manager.query(
      `SELECT s.id, ${this.workStatusOf('s.id')} AS ws FROM sessions s WHERE s.id = ANY($1::text[])`,
      [ids],
    );
    return new Map(rows.map((r) => [r.id, r.ws]));
  }

  private get repo() {
    return this.uow.manager.getRepository(SessionOrmEntity);
  }

  /** One write (`UnitOfWork.write`): joins the caller's batch or transaction. */
  async insert(session: Session): Promise<void> {
    const insert = this.sql.insertPart('sessions', { ...sessionToRow(session), activeRunId: null, messageSeq: 0 });
    await this.uow.write({ ctes: (p) => `session_insert AS (${insert(p)})` });
  }

  async save(session: Session): Promise<void> {
    if (!session.isDirty) return;
    const { id, tenantId, subjectId, createdAt, ...changes } = sessionToRow(session);
    void tenantId;
    void subjectId;
    void createdAt;
    const result = await this.repo
      .createQueryBuilder()
      .update(SessionOrmEntity)
      .set(changes)
      .where('id = :id AND revision = :expected', { id, expected: session.expectedRevision })
      .execute();
    if (result.affected !== 1) throw new ConcurrencyConflict('session', session.id, session.expectedRevision);
  }

  async findById(id: string): Promise<Session | null> {
    const rows: Array<Record<string, unknown>> = await this.uow.manager.query(`SELECT ${this.sql.selectList()} FROM sessions WHERE id = $1`, [id]);
    return rows.length ? sessionToDomain(this.sql.hydrate(rows[0])) : null;
  }

  children(principal: Principal, parentSessionId: string, page: { after?: string; limit: number; order: SortOrder }) {
    return this.page(principal, page, (qb) => qb.andWhere('s.parent_session_id = :parent', { parent: parentSessionId }));
  }

  async closeSubagent(tenantId: string, sessionId: string): Promise<void> {
    await this.uow.manager.query(`UPDATE sessions SET subagent_status = 'closed' WHERE id = $1 AND tenant_id = $2 AND parent_session_id IS NOT NULL`, [sessionId, tenantId]);
  }

  async existing(ids: string[]): Promise<string[]> {
    const rows: Array<{ id: string }> = await this.uow.manager.query(`SELECT id FROM sessions WHERE id = ANY($1::text[])`, [ids]);
    return rows.map((r) => r.id);
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.repo.delete({ id });
    return (result.affected ?? 0) > 0;
  }

  async sweepExpired(now: Date, limit: number): Promise<{ archived: string[]; deleted: string[] }> {
    const due = (strategy: string, extra: string) =>
      `SELECT id FROM sessions WHERE ttl_seconds IS NOT NULL AND ttl_strategy = '${strategy}' ${extra} AND active_run_id IS NULL
         AND last_active_at + ttl_seconds * interval '1 second' <= $1 ORDER BY last_active_at LIMIT $2 FOR UPDATE SKIP LOCKED`;
    const archived = await this.uow.statement((m) =>
      queryRows<{ id: string }>(
        m,
        `WITH due AS (${due('archive', "AND status = 'active'")})
         UPDATE sessions s SET status = 'archived', revision = s.revision + 1, updated_at = $1 FROM due WHERE s.id = due.id RETURNING s.id`,
        [now, limit],
      ),
    );
    const deleted = await this.uow.statement((m) =>
      queryRows<{ id: string }>(m, `WITH due AS (${due('delete', '')}) DELETE FROM sessions s USING due WHERE s.id = due.id RETURNING s.id`, [now, limit]),
    );
    return { archived: archived.map((r) => r.id), deleted: deleted.map((r) => r.id) };
  }

  async subagentSessionIds(principal: Principal, parentSessionId: string, parentRunId: string, limit: number): Promise<string[]> {
    // Down the tree by the partial index sessions_parent; every level in the caller's view.
    const rows = await queryRows<{ id: string }>(
      this.uow.manager,
      `WITH RECURSIVE tree(id) AS (
         SELECT id FROM sessions WHERE parent_session_id = $1 AND parent_run_id = $2 AND tenant_id = $3 AND ($4::text IS NULL OR subject_id = $4)
         UNION
         SELECT s.id FROM sessions s JOIN tree ON s.parent_session_id = tree.id WHERE s.tenant_id = $3 AND ($4::text IS NULL OR s.subject_id = $4)
       ) SELECT id FROM tree LIMIT $5`,
      [parentSessionId, parentRunId, principal.tenantId, principal.role === 'admin' ? null : principal.subjectId, limit],
    );
    return rows.map((r) => r.id);
  }

  async lockActiveRun(sessionId: string): Promise<string | null> {
    const rows: Array<{ active_run_id: string | null }> = await this.uow.manager.query(`SELECT active_run_id FROM sessions WHERE id = $1 FOR NO KEY UPDATE`, [sessionId]);
    return rows[0]?.active_run_id ?? null;
  }

  async setActiveRun(sessionId: string, runId: string | null, activity?: Date): Promise<void> {
    await this.uow.manager.query(
      `UPDATE sessions SET active_run_id = $2, last_active_at = COALESCE($3, last_active_at) WHERE id = $1`,
      [sessionId, runId, activity ?? null],
    );
  }

  list(principal: Principal, page: { after?: string; limit: number; order: SortOrder }, filter: { workStatus?: WorkStatus } = {}) {
    return this.page(principal, page, (qb) => (filter.workStatus === undefined ? qb : qb.andWhere(`${this.workStatusOf('s.id')} = :workStatus`, { workStatus: filter.workStatus })));
  }

  /** A keyset page of the tenant's sessions `principal` may see (a member: their own), narrowed by `narrow`. */
  private async page(
    principal: Principal,
    page: { after?: string; limit: number; order: SortOrder },
    narrow: (qb: ReturnType<typeof this.repo.createQueryBuilder>) => ReturnType<typeof this.repo.createQueryBuilder>,
  ) {
    const scope = (qb: ReturnType<typeof this.repo.createQueryBuilder>) => {
      qb.where('s.tenant_id = :tenant', { tenant: principal.tenantId });
      if (principal.role !== 'admin') qb.andWhere('s.subject_id = :subject', { subject: principal.subjectId });
      return narrow(qb);
    };
    let cursor: { createdAt: Date; id: string } | null = null;
    if (page.after !== undefined) {
      const row = await scope(this.repo.createQueryBuilder('s')).andWhere('s.id = :after', { after: page.after }).getOne();
      if (!row) throw invalidCursor(page.after);
      cursor = { createdAt: row.createdAt, id: row.id };
    }
    const { rows, hasMore } = await keysetPage(scope(this.repo.createQueryBuilder('s')), 's', cursor, page.order, page.limit);
    return { items: rows.map(sessionToDomain), hasMore };
  }
}
