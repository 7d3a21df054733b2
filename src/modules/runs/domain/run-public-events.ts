import type { NewRunEvent } from '../../events/domain/run-event';
import type { RunEvent } from './run-decider';
import type { RunState } from './run-state';

/**
 * The public events of each decider event (CONTRACT section 8): what a run's stream shows of a
 * change. Pure; the aggregate records them as it applies the decider's events.
 */
/** The public events `e` records, given the state before (`s`) and after (`next`) it. */
export function publicEvents(s: RunState, e: RunEvent, next: RunState): NewRunEvent[] {
  switch (e.type) {
    case 'started':
      return [{ type: 'run.started', data: { status: 'running' } }];
    case 'input_taken':
      return [{ type: 'run.input', data: { message_id: e.message_id } }];
    case 'turn_begun':
      return [{ type: 'message.started', data: { message_id: e.message_id, role: 'assistant' } }];
    case 'delta_streamed':
      return [{ type: 'message.delta', data: { message_id: e.message_id, content_index: 0, delta: e.delta } }];
    case 'turn_ended':
      return [{ type: 'message.completed', data: { message_id: e.message_id, content: e.content } }];
    case 'tools_requested':
      return e.calls.map((p) => ({ type: 'tool.requested', data: { tool_call_id: p.tool_call_id, tool_name: p.tool_name, arguments: p.arguments, risk: p.risk ?? 'auto' } }));
    case 'tool_started': {
      const p = next.state.pending.find((x) => x.tool_call_id === e.tool_call_id)!;
      return [{ type: 'tool.started', data: { tool_call_id: p.tool_call_id, tool_name: p.tool_name, attempt: e.attempt } }];
    }
    case 'tool_handed_to_client': {
      const p = next.state.pending.find((x) => x.tool_call_id === e.tool_call_id)!;
      return [{ type: 'tool.started', data: { tool_call_id: p.tool_call_id, tool_name: p.tool_name, attempt: 1 } }];
    }
    case 'tool_finished': {
      if (e.silent) return [];
      const p = s.state.pending.find((x) => x.tool_call_id === e.tool_call_id)!;
      const out: NewRunEvent[] = e.not_started ? [{ type: 'tool.started', data: { tool_call_id: p.tool_call_id, tool_name: p.tool_name, attempt: 0 } }] : [];
      out.push(
        e.result.ok
          ? { type: 'tool.completed', data: { tool_call_id: p.tool_call_id, tool_name: p.tool_name, result: e.result.result, duration_ms: e.duration_ms } }
          : { type: 'tool.failed', data: { tool_call_id: p.tool_call_id, tool_name: p.tool_name, error: { retryable: false, ...e.result.error }, duration_ms: e.duration_ms } },
      );
      return out;
    }
    case 'approval_opened': {
      const p = s.state.pending.find((x) => x.tool_call_id === e.tool_call_id)!;
      return [
        {
          type: 'approval.requested',
          data: { approval_id: e.approval_id, tool_call_id: p.tool_call_id, tool_name: p.tool_name, arguments: p.arguments, risk: p.risk ?? 'approve', expires_at: new Date(e.expires_at).toISOString() },
        },
      ];
    }
    case 'approval_decided':
      return [
        {
          type: e.decision === 'approve' ? 'approval.accepted' : 'approval.rejected',
          data: { approval_id: e.approval_id, tool_call_id: e.tool_call_id, decided_by: e.decided_by, reason: e.reason },
        },
      ];
    case 'waiting':
      return [{ type: 'run.waiting', data: { status: e.status, reason: e.reason } }];
    case 'input_requested': {
      // ask_user is executing from here on (tool.started) until the user's input answers it.
      const p = s.state.pending.find((x) => x.tool_call_id === e.tool_call_id)!;
      return [
        { type: 'tool.started', data: { tool_call_id: p.tool_call_id, tool_name: p.tool_name, attempt: 1 } },
        { type: 'run.input_requested', data: { question: e.question, tool_call_id: e.tool_call_id, expires_at: new Date(e.expires_at).toISOString() } },
      ];
    }
    case 'timer_set': {
      const p = s.state.pending.find((x) => x.tool_call_id === e.tool_call_id)!;
      return [{ type: 'tool.started', data: { tool_call_id: p.tool_call_id, tool_name: p.tool_name, attempt: 1 } }];
    }
    case 'callback_awaited':
    case 'quota_reached':
      return [];
    case 'resumed':
      return [{ type: 'run.resumed', data: { status: 'running' } }];
    case 'handed_off':
      return [
        {
          type: 'agent.handoff',
          data: { from_agent: e.from.id, to_agent: e.to.id, reason: e.reason, tool_call_id: e.tool_call_id },
        },
      ];
    case 'cancel_requested':
      return [{ type: 'run.cancel_requested', data: { requested_by: e.requested_by, ...(e.reason ? { reason: e.reason } : {}) } }];
    case 'finished':
      return [
        { type: 'usage', data: { ...next.usage } },
        {
          type: 'run.finished',
          data: { status: e.status, final_message_id: next.finalMessageId, termination_reason: next.terminationReason, error: next.error, usage: { ...next.usage } },
        },
      ];
    case 'subagent_run_started':
      // A new subagent; a further run of one is the call's own tool.completed.
      return e.created ? [{ type: 'subagent.created', data: { subagent_id: e.subagent.id, name: e.subagent.name, agent_id: e.subagent.agent.id, run_id: e.run_id, tool_call_id: e.tool_call_id } }] : [];
    case 'subagents_awaited': {
      const p = s.state.pending.find((x) => x.tool_call_id === e.tool_call_id)!;
      return [{ type: 'tool.started', data: { tool_call_id: p.tool_call_id, tool_name: p.tool_name, attempt: 1 } }];
    }
    case 'subagent_ended':
      return [{ type: 'subagent.completed', data: { subagent_id: e.outcome.subagent_id, run_id: e.outcome.run_id, status: e.outcome.status } }];
    case 'subagent_closed':
      return [{ type: 'subagent.closed', data: { subagent_id: e.subagent_id } }];
    case 'subagent_approval_relayed': {
      const a = e.approval;
      return [
        {
          type: 'approval.requested',
          data: { approval_id: a.approval_id, tool_call_id: a.tool_call_id, tool_name: a.tool_name, arguments: a.arguments, risk: a.risk, expires_at: new Date(a.expires_at).toISOString(), run_id: a.run_id, subagent_id: e.subagent_id },
        },
      ];
    }
    case 'input_received':
    case 'pending_cleared':
    case 'subagents_cancel_requested':
      return [];
  }
}
