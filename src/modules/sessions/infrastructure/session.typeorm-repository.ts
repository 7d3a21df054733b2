import { Injectable } from '@nestjs/common';
import { Principal } from '../../../common/auth/principal';
import { EntitySql } from '../../../common/database/entity-sql';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { ConcurrencyConflict } from '../../../common/errors/domain-error';
import { invalidCursor, keysetPage, SortOrder } from '../../../common/http/pagination';
import { Session } from '../domain/session.aggregate';
import { SessionRepository } from '../domain/session.repository';
import { sessionToDomain, sessionToRow } from './session.mapper';
import { SessionOrmEntity } from './session.orm-entity';

@Injectable()
export class SessionTypeormRepository extends SessionRepository {
  private readonly sql: EntitySql<SessionOrmEntity>;

  constructor(private readonly uow: UnitOfWork) {
    super();
    this.sql = new EntitySql(uow.dataSource, SessionOrmEntity);
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

  async existing(ids: string[]): Promise<string[]> {
    const rows: Array<{ id: string }> = await this.uow.manager.query(`SELECT id FROM sessions WHERE id = ANY($1::text[])`, [ids]);
    return rows.map((r) => r.id);
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.repo.delete({ id });
    return (result.affected ?? 0) > 0;
  }

  async lockActiveRun(sessionId: string): Promise<string | null> {
    const rows: Array<{ active_run_id: string | null }> = await this.uow.manager.query(`SELECT active_run_id FROM sessions WHERE id = $1 FOR UPDATE`, [sessionId]);
    return rows[0]?.active_run_id ?? null;
  }

  async setActiveRun(sessionId: string, runId: string | null, activity?: Date): Promise<void> {
    await this.uow.manager.query(
      `UPDATE sessions SET active_run_id = $2, last_active_at = COALESCE($3, last_active_at) WHERE id = $1`,
      [sessionId, runId, activity ?? null],
    );
  }

  async list(principal: Principal, page: { after?: string; limit: number; order: SortOrder }) {
    const scope = (qb: ReturnType<typeof this.repo.createQueryBuilder>) => {
      qb.where('s.tenant_id = :tenant', { tenant: principal.tenantId });
      if (principal.role !== 'admin') qb.andWhere('s.subject_id = :subject', { subject: principal.subjectId });
      return qb;
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
