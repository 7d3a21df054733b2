import type { AutomationInvocation, AutomationProps } from '../domain/automation';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** An invocation as the native API shows it (`GET /v1/automations/{id}/invocations`, webhook `automation.invocation_failed`). */
export function toInvocationResponse(i: AutomationInvocation) {
  return {
    id: i.id,
    object: 'automation.invocation' as const,
    automation_id: i.automationId,
    source: i.source,
    scheduled_for: iso(i.slot),
    status: i.status,
    skip_reason: i.skipReason,
    error: i.error,
    run_id: i.runId,
    session_id: i.sessionId,
    created_at: iso(i.createdAt)!,
    updated_at: iso(i.updatedAt)!,
  };
}

/** An automation as the native API shows it. */
export function toAutomationResponse(a: AutomationProps, last: AutomationInvocation | null) {
  return {
    id: a.id,
    object: 'automation' as const,
    tenant_id: a.tenantId,
    subject_id: a.subjectId,
    name: a.name,
    schedule: a.schedule.type === 'once' ? { type: 'once' as const, at: a.schedule.at.toISOString() } : { ...a.schedule },
    target: a.target.type === 'session' ? { type: 'session' as const, session_id: a.target.sessionId } : { type: 'new_session' as const, agent_id: a.target.agentId, metadata: a.target.metadata },
    input: a.input,
    enabled: a.status === 'active',
    status: a.status,
    metadata: a.metadata,
    created_by: a.createdBy.type === 'agent' ? { type: 'agent' as const, session_id: a.createdBy.sessionId, tool_call_id: a.createdBy.toolCallId } : { type: 'developer' as const },
    next_run_at: iso(a.nextRunAt),
    last_invocation: last ? toInvocationResponse(last) : null,
    revision: a.revision,
    created_at: iso(a.createdAt)!,
    updated_at: iso(a.updatedAt)!,
  };
}
