import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { RunReadView } from '../../../domain/run.repository';

/** A run the caller may see and its last event sequence (one read): what the public Run resource is built from. */
export class GetRunViewQuery extends Query<RunReadView> {
  constructor(
    readonly principal: Principal,
    readonly runId: string,
  ) {
    super();
  }
}
