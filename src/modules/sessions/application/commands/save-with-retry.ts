import { Principal } from '../../../../common/auth/principal';
import { UnitOfWork } from '../../../../common/database/unit-of-work';
import { ConcurrencyConflict } from '../../../../common/errors/domain-error';
import { Session } from '../../domain/session.aggregate';
import { SessionRepository } from '../../domain/session.repository';
import { loadOwnedSession } from '../load-owned-session';

/**
 * Load -> check the caller's expected revision -> mutate -> conditional save.
 * With `expected_revision` a lost race is the caller's 409 `session_conflict`; without it the
 * command is re-applied to the fresh state (it has no precondition to break), a few times at most.
 */
export async function saveWithRetry(
  repo: SessionRepository,
  uow: UnitOfWork,
  principal: Principal,
  sessionId: string,
  expectedRevision: number | undefined,
  mutate: (s: Session) => void,
): Promise<Session> {
  for (let attempt = 1; ; attempt++) {
    const session = await loadOwnedSession(repo, principal, sessionId);
    session.assertRevision(expectedRevision);
    mutate(session);
    try {
      await uow.run(() => repo.save(session));
      return session;
    } catch (err) {
      if (!(err instanceof ConcurrencyConflict)) throw err;
      if (expectedRevision !== undefined || attempt >= 5) {
        const current = await loadOwnedSession(repo, principal, sessionId);
        current.assertRevision(expectedRevision ?? session.expectedRevision);
        throw err;
      }
    }
  }
}
