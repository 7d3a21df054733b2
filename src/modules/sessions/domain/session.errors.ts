import { DomainError } from '../../../common/errors/domain-error';

export function sessionNotFound(id: string): DomainError {
  return new DomainError('session_not_found', 'session not found', { session_id: id });
}
