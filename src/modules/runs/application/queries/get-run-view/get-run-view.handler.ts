import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { RunRepository } from '../../../domain/run.repository';
import { loadOwnedRunView } from '../../load-owned-run';
import { GetRunViewQuery } from './get-run-view.query';

@QueryHandler(GetRunViewQuery)
export class GetRunViewHandler implements IQueryHandler<GetRunViewQuery> {
  constructor(private readonly runs: RunRepository) {}

  async execute({ principal, runId }: GetRunViewQuery) {
    // Someone else's run answers exactly like a missing id (as loadOwnedRun).
    return loadOwnedRunView(this.runs, principal, runId);
  }
}
