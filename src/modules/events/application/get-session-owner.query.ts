import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../common/auth/principal';

/** Who owns a session, for its event stream. Throws `session_not_found` for missing or foreign sessions. */
export interface SessionOwner {
  sessionId: string;
  tenantId: string;
  subjectId: string;
}

/** Answered by the sessions module (events does not import sessions: sessions imports events). */
export class GetSessionOwnerQuery extends Query<SessionOwner> {
  constructor(
    readonly principal: Principal,
    readonly sessionId: string,
  ) {
    super();
  }
}
