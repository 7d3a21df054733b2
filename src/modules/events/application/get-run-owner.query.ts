import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../common/auth/principal';
import { EventStreamState } from '../domain/event-streams';

/** Who owns a run, for event streams. Throws `run_not_found` for missing or foreign runs. */
export interface RunOwner {
  runId: string;
  sessionId: string;
  tenantId: string;
  subjectId: string;
  status: string;
  /** Terminal status: the stream will get no further events. */
  finished: boolean;
  /** The run stream's counters, read with the run (one round trip for an SSE request). */
  stream: EventStreamState;
}

export class GetRunOwnerQuery extends Query<RunOwner> {
  constructor(
    readonly principal: Principal,
    readonly runId: string,
  ) {
    super();
  }
}
