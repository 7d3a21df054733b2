import type { IntegrationEvent } from '../../../common/outbox/integration-events';
import { AttachmentDomainEvent, AttachmentProps } from './attachment.aggregate';

/** The integration events the attachments module publishes (CONTRACT section 14). */
export type AttachmentIntegrationEventType = 'attachment.ready' | 'attachment.rejected';

/**
 * The integration events of a save: one for each scan verdict it records (`ready` or
 * `rejected`), with what the attachments module states about it as the payload.
 */
export function attachmentIntegrationEvents(a: Pick<Readonly<AttachmentProps>, 'id' | 'tenantId'>, events: readonly AttachmentDomainEvent[]): IntegrationEvent[] {
  const out: IntegrationEvent[] = [];
  for (const e of events) {
    if (e.type === 'attachment.ready') out.push({ tenantId: a.tenantId, type: e.type, objectId: a.id, payload: { status: 'ready', media_type: e.mediaType } });
    else if (e.type === 'attachment.rejected') out.push({ tenantId: a.tenantId, type: e.type, objectId: a.id, payload: { status: 'rejected', rejection_reason: e.reason } });
  }
  return out;
}
