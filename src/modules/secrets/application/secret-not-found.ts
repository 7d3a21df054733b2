import { DomainError } from '../../../common/errors/domain-error';

/** Another tenant's secret, and a deleted one, answer like a name never set. */
export const secretNotFound = (name: string) => new DomainError('secret_not_found', 'secret not found', { name });
