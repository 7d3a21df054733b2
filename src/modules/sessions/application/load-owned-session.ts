import { canSee, Principal } from '../../../common/auth/principal';
import { Session } from '../domain/session.aggregate';
import { sessionNotFound } from '../domain/session.errors';
import { SessionRepository } from '../domain/session.repository';

/** The session if the caller may see it; otherwise exactly the 404 of a missing id. */
export async function loadOwnedSession(repo: SessionRepository, principal: Principal, id: string): Promise<Session> {
  const session = await repo.findById(id);
  if (!session || !canSee(principal, session)) throw sessionNotFound(id);
  return session;
}
