import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { canSee } from '../../../common/auth/principal';
import { UnitOfWork } from '../../../common/database/unit-of-work';
import { DomainError } from '../../../common/errors/domain-error';
import { GetRunOwnerQuery, RunOwner } from './get-run-owner.query';

/**
 * TEMPORARY: reads the `runs` table directly until the runs module answers this query itself
 * (then this handler and its registration in EventsModule go away).
 */
@QueryHandler(GetRunOwnerQuery)
export class GetRunOwnerHandler implements IQueryHandler<GetRunOwnerQuery, RunOwner> {
  constructor(private readonly uow: UnitOfWork) {}

  async execute({ principal, runId }: GetRunOwnerQuery): Promise<RunOwner> {
    const rows: Array<{ id: string; session_id: string; tenant_id: string; subject_id: string; status: string }> = await this.uow.manager.query(
      `SELECT id, session_id, tenant_id, subject_id, status FROM runs WHERE id = $1`,
      [runId],
    );
    const row = rows[0];
    if (!row || !canSee(principal, { tenantId: row.tenant_id, subjectId: row.subject_id })) {
      throw new DomainError('run_not_found', 'run not found', { run_id: runId });
    }
    return { runId: row.id, sessionId: row.session_id, tenantId: row.tenant_id, subjectId: row.subject_id, status: row.status };
  }
}
