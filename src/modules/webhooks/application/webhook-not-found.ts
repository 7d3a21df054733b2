import { DomainError } from '../../../common/errors/domain-error';

/** Another tenant's endpoint answers like a missing id. */
export const webhookNotFound = (id: string) => new DomainError('webhook_not_found', 'webhook not found', { webhook_id: id });
