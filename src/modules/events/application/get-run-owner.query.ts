import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../common/auth/principal';

/** Who owns a run, for event streams. Throws `run_not_found` for missing or foreign runs. */
export interface RunOwner {
  runId: string;
  sessionId: string;
  tenantId: string;
  subjectId: string;
  status: string;
}

export const TERMINAL_RUN_STATUSES: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled', 'expired', 'terminated']);

export class GetRunOwnerQuery extends Query<RunOwner> {
  constructor(
    readonly principal: Principal,
    readonly runId: string,
  ) {
    super();
  }
}
