import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { canSee } from '../../../../../common/auth/principal';
import { RunRepository } from '../../../domain/run.repository';
import { runNotFound } from '../../load-owned-run';
import { GetRunViewQuery } from './get-run-view.query';

@QueryHandler(GetRunViewQuery)
export class GetRunViewHandler implements IQueryHandler<GetRunViewQuery> {
  constructor(private readonly runs: RunRepository) {}

  async execute({ principal, runId }: GetRunViewQuery) {
    const view = await this.runs.findView(runId);
    // Someone else's run answers exactly like a missing id (as loadOwnedRun).
    if (!view || !canSee(principal, { tenantId: view.run.tenantId, subjectId: view.run.subjectId })) throw runNotFound(runId);
    return view;
  }
}
