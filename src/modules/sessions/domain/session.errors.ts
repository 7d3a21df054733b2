import { DomainError } from '../../../common/errors/domain-error';

/** 409: an archived session accepts no new runs. */
export function sessionArchived(id: string): DomainError {
  return new DomainError('session_archived', 'the session is archived and accepts no new runs', { session_id: id });
}

export function sessionNotFound(id: string): DomainError {
  return new DomainError('session_not_found', 'session not found', { session_id: id });
}
