import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';

/**
 * The subagent sessions (CONTRACT 16) a run created and those below them, as `principal` may see
 * them (a member: their own children only): e.g. whose approvals the run's approvals route lists.
 */
export class SubagentSessionIdsQuery extends Query<string[]> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
    readonly runId: string,
  ) {
    super();
  }
}
