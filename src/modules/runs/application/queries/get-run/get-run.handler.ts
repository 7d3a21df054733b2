import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { RunRepository } from '../../../domain/run.repository';
import { loadOwnedRun } from '../../load-owned-run';
import { GetRunQuery } from './get-run.query';

@QueryHandler(GetRunQuery)
export class GetRunHandler implements IQueryHandler<GetRunQuery> {
  constructor(private readonly runs: RunRepository) {}

  async execute({ principal, runId }: GetRunQuery) {
    return (await loadOwnedRun(this.runs, principal, runId)).snapshot();
  }
}
