import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../common/auth/principal';

/** Who owns a run, for event streams. Throws `run_not_found` for missing or foreign runs. */
export interface RunOwner {
  runId: string;
  sessionId: string;
  tenantId: string;
  subjectId: string;
  status: string;
  /** Terminal status: the stream will get no further events. */
  finished: boolean;
}

export class GetRunOwnerQuery extends Query<RunOwner> {
  constructor(
    readonly principal: Principal,
    readonly runId: string,
  ) {
    super();
  }
}
