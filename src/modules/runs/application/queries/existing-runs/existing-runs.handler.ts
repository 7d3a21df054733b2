import { IQueryHandler, QueryHandler } from '@nestjs/cqrs';
import { ExistingRunsQuery } from '../../../../events/application/stream-targets.query';
import { RunRepository } from '../../../domain/run.repository';

@QueryHandler(ExistingRunsQuery)
export class ExistingRunsHandler implements IQueryHandler<ExistingRunsQuery, string[]> {
  constructor(private readonly runs: RunRepository) {}

  execute({ ids }: ExistingRunsQuery): Promise<string[]> {
    return this.runs.existing(ids);
  }
}
