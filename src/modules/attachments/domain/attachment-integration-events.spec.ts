import { attachmentIntegrationEvents } from './attachment-integration-events';

describe('attachment integration events', () => {
  const a = { id: 'att_1', tenantId: 'tenant_a' };

  it('a scan verdict publishes attachment.ready or attachment.rejected with its facts', () => {
    expect(attachmentIntegrationEvents(a, [{ type: 'attachment.ready', attachmentId: 'att_1', mediaType: 'text/plain' }])).toEqual([
      { tenantId: 'tenant_a', type: 'attachment.ready', objectId: 'att_1', payload: { status: 'ready', media_type: 'text/plain' } },
    ]);
    expect(attachmentIntegrationEvents(a, [{ type: 'attachment.rejected', attachmentId: 'att_1', reason: 'malware_detected' }])).toEqual([
      { tenantId: 'tenant_a', type: 'attachment.rejected', objectId: 'att_1', payload: { status: 'rejected', rejection_reason: 'malware_detected' } },
    ]);
  });

  it('the other changes publish nothing', () => {
    expect(
      attachmentIntegrationEvents(a, [
        { type: 'attachment.upload_started', attachmentId: 'att_1' },
        { type: 'attachment.uploaded', attachmentId: 'att_1', sizeBytes: 1, sha256: 'x' },
        { type: 'attachment.scan_started', attachmentId: 'att_1' },
        { type: 'attachment.expired', attachmentId: 'att_1' },
        { type: 'attachment.deleted', attachmentId: 'att_1' },
      ]),
    ).toEqual([]);
  });
});
