import type { ContentPart } from '../../agents/domain/model-provider';
import type { AutomationInvocation, AutomationProps, AutomationTarget } from '../../automations/domain/automation';
import { InputProblem, parseMessages } from './input-events';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const unix = (d: Date) => Math.floor(d.getTime() / 1000);

/** The text of an input's parts (an existing-session target's `instructions`). */
function textOf(content: ContentPart[]): string {
  return content
    .filter((p): p is { type: 'text'; text: string } => p.type === 'text')
    .map((p) => p.text)
    .join('\n');
}

/**
 * The SDK's `AutomationTargetParam` as our target and input: `new_session` with `agent_id`,
 * `environment: {"type":"none"}` and `input` (user messages of input_text parts); `existing_session`
 * with `session_id` and `instructions` (delivered as the user input). An inline `agent` and
 * `vault_ids` are 400 naming the param (this server has no vaults; automations target saved agents).
 */
export function parseAutomationTarget(raw: unknown): { target: AutomationTarget; content: ContentPart[] } {
  if (!isObj(raw)) throw new InputProblem('target must be an object', 'target');
  if (raw.type === 'existing_session') {
    for (const k of Object.keys(raw)) if (!['type', 'session_id', 'instructions'].includes(k)) throw new InputProblem(`target.${k} is not a field of an existing_session target`, `target.${k}`);
    if (typeof raw.session_id !== 'string' || raw.session_id === '') throw new InputProblem('target.session_id is required', 'target.session_id');
    if (typeof raw.instructions !== 'string' || raw.instructions === '') throw new InputProblem('target.instructions must be a non-empty string', 'target.instructions');
    return { target: { type: 'session', sessionId: raw.session_id }, content: [{ type: 'text', text: raw.instructions }] };
  }
  if (raw.type === 'new_session') {
    for (const k of Object.keys(raw)) {
      if (!['type', 'environment', 'input', 'agent', 'agent_id', 'metadata', 'vault_ids'].includes(k)) throw new InputProblem(`target.${k} is not a field of a new_session target`, `target.${k}`);
    }
    const env = raw.environment;
    if (!isObj(env) || env.type !== 'none' || Object.keys(env).length > 1) {
      throw new InputProblem('target.environment must be {"type":"none"}: this server runs agents without an execution environment', 'target.environment');
    }
    if (raw.agent !== undefined && raw.agent !== null) throw new InputProblem('target.agent (an inline agent) is not supported for automations on this server: use target.agent_id', 'target.agent');
    if (Array.isArray(raw.vault_ids) && raw.vault_ids.length > 0) throw new InputProblem('vault_ids are not supported by this server', 'target.vault_ids');
    if (typeof raw.agent_id !== 'string' || raw.agent_id === '') throw new InputProblem('target.agent_id is required', 'target.agent_id');
    let metadata: Record<string, string> = {};
    if (raw.metadata !== undefined && raw.metadata !== null) {
      if (!isObj(raw.metadata)) throw new InputProblem('target.metadata must be an object of strings', 'target.metadata');
      const entries = Object.entries(raw.metadata);
      if (entries.length > 16) throw new InputProblem('target.metadata: at most 16 keys', 'target.metadata');
      for (const [k, v] of entries) if (typeof v !== 'string' || k.length > 64 || v.length > 512) throw new InputProblem('target.metadata: string values (keys up to 64, values up to 512 characters)', `target.metadata.${k}`);
      metadata = raw.metadata as Record<string, string>;
    }
    return { target: { type: 'new_session', agentId: raw.agent_id, metadata }, content: parseMessages(raw.input, 'target.input') };
  }
  throw new InputProblem('target.type must be "new_session" or "existing_session"', 'target.type');
}

/** Our automation as the SDK's `Automation` (`PeriodicAutomation` | `OneTimeAutomation`); times in Unix seconds. */
export function toOpenAiAutomation(a: AutomationProps) {
  const target =
    a.target.type === 'session'
      ? { type: 'existing_session' as const, session_id: a.target.sessionId, instructions: textOf(a.input.content) }
      : {
          type: 'new_session' as const,
          agent: null,
          agent_id: a.target.agentId,
          environment: { type: 'none' as const },
          input: [{ type: 'message' as const, role: 'user' as const, content: a.input.content.filter((p) => p.type === 'text').map((p) => ({ type: 'input_text' as const, text: (p as { text: string }).text })) }],
          metadata: a.target.metadata,
          vault_ids: [] as string[],
        };
  const createdBy = a.createdBy.type === 'agent' ? { type: 'agent' as const, session_id: a.createdBy.sessionId, tool_call_id: a.createdBy.toolCallId } : { type: 'developer' as const };
  const common = { id: a.id, object: 'agent.automation' as const, created_at: unix(a.createdAt), created_by: createdBy, metadata: a.metadata, name: a.name, target };
  if (a.schedule.type === 'once') return { ...common, type: 'once' as const, run_at: unix(a.schedule.at), status: a.status };
  return { ...common, type: 'periodic' as const, expression: a.schedule.expression, timezone: a.schedule.timezone, status: a.status === 'completed' ? ('paused' as const) : a.status };
}

/** Our invocation statuses as the SDK's: `started` (its run was created) is `completed` (delivered: "completed does not mean the agent's work has finished"). */
const STATUS = { queued: 'queued', started: 'completed', failed: 'failed', skipped: 'skipped' } as const;

/**
 * Our invocation as the SDK's `AutomationInvocation`. `source.automation` is the automation as it is
 * now (this server keeps no snapshot per occurrence). `skip_reason` is ours: `missed` (the slot was
 * older than AUTOMATION_CATCHUP_MS when a node first saw it); the SDK documents `pending_delivery`.
 */
export function toOpenAiInvocation(i: AutomationInvocation, automation: AutomationProps) {
  return {
    id: i.id,
    object: 'agent.automation.invocation' as const,
    automation_id: i.automationId,
    created_at: unix(i.createdAt),
    error: i.error ? { code: i.error.code, message: i.error.message } : null,
    scheduled_at: i.slot ? unix(i.slot) : null,
    session_id: i.sessionId,
    skip_reason: i.skipReason,
    source: i.source === 'manual' ? { type: 'manual' as const } : { type: 'automation' as const, automation: toOpenAiAutomation(automation) },
    status: STATUS[i.status],
  };
}
