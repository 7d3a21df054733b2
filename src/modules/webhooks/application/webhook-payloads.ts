import { Injectable } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { Principal } from '../../../common/auth/principal';
import { DomainError } from '../../../common/errors/domain-error';
import { toAttachmentResponse } from '../../attachments/api/dto/attachment.response.dto';
import { GetAttachmentQuery } from '../../attachments/application/queries/get-attachment/get-attachment.query';
import { RunViews } from '../../runs/application/run-views';
import { GetExportedAuditRecordQuery } from '../../audit/application/queries/get-exported-audit-record/get-exported-audit-record.query';
import { WebhookDelivery } from '../domain/webhook-events';
import { GetAutomationInvocationQuery } from '../../automations/application/automation-queries';
import { toInvocationResponse } from '../../automations/application/automation-views';

/**
 * The body of a delivery: `{id, type, created_at, tenant_id, data: {object}}`, where `object` is
 * the Run or Attachment as `GET` returns it to an admin of the tenant, read through the owning
 * module's query at the time of the attempt (not a snapshot: a retried `run.requires_action` may
 * show the run already past it - `type` and `created_at` say what happened when). Null when
 * the object no longer exists (its session was deleted). `audit.recorded`: `data` is the audit
 * record as the export writes it (`kind`, the hashed fields, `prev_hash`, `hash`, `mac`, `hash_alg`).
 * `automation.invocation_failed`: `object` is the automation invocation as `GET /v1/automations/{id}/invocations` lists it (null once the automation is deleted).
 */
@Injectable()
export class WebhookPayloads {
  constructor(
    private readonly runs: RunViews,
    private readonly queries: QueryBus,
  ) {}

  async render(d: WebhookDelivery): Promise<string | null> {
    const principal: Principal = { tenantId: d.tenantId, subjectId: 'webhooks', role: 'admin', keyId: 'webhooks' };
    if (d.eventType === 'audit.recorded') {
      // The record as exported (not a snapshot taken at the event: records never change), null once pruned.
      const record = await this.queries.execute(new GetExportedAuditRecordQuery(principal, d.objectId));
      if (record === null) return null;
      return JSON.stringify({ id: d.id, type: d.eventType, created_at: d.createdAt.toISOString(), tenant_id: d.tenantId, data: record });
    }
    let object: unknown;
    try {
      object = d.eventType.startsWith('automation.')
        ? toInvocationResponse(await this.queries.execute(new GetAutomationInvocationQuery(principal, null, d.objectId)))
        : d.eventType.startsWith('run.')
        ? await this.runs.get(principal, d.objectId)
        : toAttachmentResponse(await this.queries.execute(new GetAttachmentQuery(principal, d.objectId)));
    } catch (err) {
      if (err instanceof DomainError && (err.code === 'run_not_found' || err.code === 'attachment_not_found' || err.code === 'not_found')) return null;
      throw err;
    }
    return JSON.stringify({ id: d.id, type: d.eventType, created_at: d.createdAt.toISOString(), tenant_id: d.tenantId, data: { object } });
  }
}
