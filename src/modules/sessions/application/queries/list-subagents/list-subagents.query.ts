import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { SessionProps } from '../../../domain/session.aggregate';

/** `GET /sessions/{id}/subagents` (CONTRACT 16): the session's subagents (child sessions), oldest first. */
export class ListSubagentsQuery extends Query<Array<Readonly<SessionProps>>> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
  ) {
    super();
  }
}
