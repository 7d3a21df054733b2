import type { ContentPart } from '../../agents/domain/model-provider';
import type { ResolvedAgent } from '../../agents/domain/agent-definition';
import type { ToolDefinition } from '../../agents/domain/tool';
import type { MessageProps } from '../../sessions/domain/message';
import type { SessionProps } from '../../sessions/domain/session.aggregate';
import type { RunProps } from '../../runs/domain/run.aggregate';
import { jsonText, OpenAiItem, OpenAiSession, OpenAiTurn, RequiredAction, SessionSnapshot, toTokenUsage, turnErrorOf, turnStatusOf, unixSeconds } from './openai-shapes';

/** Our agent in OpenAI's `Agent` shape (tools: its client and server tools as function tools). */
export function toOpenAiAgent(definition: ResolvedAgent) {
  const created = unixSeconds(definition.createdAt) ?? 0; // file agents: 0
  const tools = definition.resolvedTools;
  return {
    id: definition.id,
    object: 'agent' as const,
    created_at: created,
    updated_at: created,
    name: definition.id,
    instructions: definition.instructions,
    metadata: { version: definition.version, description: definition.description },
    model: definition.model,
    multi_agent: { enabled: false },
    reasoning: { effort: null, summary: null },
    service_tier: 'default' as const,
    text: { format: { type: 'text' } },
    tools: tools.map((t) => ({ type: 'function' as const, name: t.name, description: t.description, parameters: t.parameters, strict: false })),
  };
}

/** The session's agent as `AgentSession.agent`. */
export function sessionAgentOf(s: Readonly<SessionProps>, instructions: string | null, tools: ToolDefinition[]) {
  return {
    id: s.agent.id,
    // An inline configuration has no saved name (OpenAI: null).
    name: s.agent.id.startsWith('inline_') ? null : s.agent.id,
    instructions,
    model: s.agent.model,
    multi_agent: { enabled: false },
    reasoning: { effort: null, summary: null },
    service_tier: 'default' as const,
    text: { format: { type: 'text' } },
    tools: tools.map((t) => ({ type: 'function' as const, name: t.name, description: t.description, parameters: t.parameters, strict: false })),
  };
}

export function sessionSnapshotOf(s: Readonly<SessionProps>, agent: Record<string, unknown>): SessionSnapshot {
  return { id: s.id, agent, created_at: unixSeconds(s.createdAt)!, metadata: { ...s.metadata } };
}

/** A native session (and its active run, if any) as an `agent.session`. */
export function toOpenAiSession(s: Readonly<SessionProps>, agent: Record<string, unknown>, active: Readonly<RunProps> | null): OpenAiSession {
  let status: OpenAiSession['status'] = 'idle';
  const required: RequiredAction[] = [];
  if (active && !['completed', 'failed', 'cancelled', 'expired', 'terminated'].includes(active.status)) {
    status = active.status === 'waiting_for_tool' || active.status === 'waiting_for_approval' ? 'requires_action' : 'in_progress';
    for (const p of active.state.pending ?? []) {
      if (p.status === 'awaiting_client') {
        required.push({ type: 'function_call', turn_id: active.id, call_id: p.tool_call_id, name: p.tool_name, arguments: jsonText(p.arguments) });
      } else if (p.status === 'awaiting_approval' && p.approval_id) {
        required.push({ type: 'approval_request', turn_id: active.id, approval_id: p.approval_id, call_id: p.tool_call_id, name: p.tool_name, arguments: jsonText(p.arguments) });
      }
    }
  }
  return {
    ...sessionSnapshotOf(s, agent),
    object: 'agent.session',
    environment: { type: 'none' },
    error: null,
    last_active_at: unixSeconds(s.lastActiveAt)!,
    required_actions: required,
    status,
    usage: null,
    vault_ids: [],
  };
}

export function toOpenAiTurn(r: Readonly<RunProps>): OpenAiTurn {
  return {
    id: r.id,
    agent_id: r.agent.id,
    completed_at: unixSeconds(r.finishedAt),
    created_at: unixSeconds(r.createdAt)!,
    error: turnErrorOf(r.status, r.error, r.terminationReason),
    object: 'agent.session.turn',
    session_id: r.sessionId,
    started_at: unixSeconds(r.startedAt),
    status: turnStatusOf(r.status),
    subagent_id: null,
    usage: toTokenUsage(r.usage),
  };
}

/**
 * A message as items: a user message, an assistant message (its text; `commentary` when it also
 * called tools) and one `function_call` per tool call, a tool message as one
 * `function_call_output` per result. Ids: the message id, the tool call id, `out_<call id>`.
 */
export function itemsOfMessage(m: Readonly<MessageProps>): OpenAiItem[] {
  const turnId = m.runId ?? '';
  const texts = m.content.filter((p): p is Extract<ContentPart, { type: 'text' }> => p.type === 'text').map((p) => p.text);
  const items: OpenAiItem[] = [];
  const status = m.status === 'completed' ? 'completed' : m.status === 'streaming' || m.status === 'pending' ? 'in_progress' : 'incomplete';
  if (m.role === 'user') {
    items.push({ id: m.id, type: 'message', role: 'user', status, phase: null, content: texts.map((text) => ({ type: 'input_text', text })), turn_id: turnId });
  } else if (m.role === 'assistant') {
    const calls = m.content.filter((p): p is Extract<ContentPart, { type: 'tool_call' }> => p.type === 'tool_call');
    if (texts.length > 0 || calls.length === 0) {
      items.push({
        id: m.id,
        type: 'message',
        role: 'assistant',
        status,
        phase: calls.length ? 'commentary' : 'final_answer',
        content: [{ type: 'output_text', text: texts.join('') }],
        turn_id: turnId,
      });
    }
    for (const c of calls) {
      items.push({ id: c.tool_call_id, type: 'function_call', call_id: c.tool_call_id, name: c.tool_name, arguments: jsonText(c.arguments), status: 'completed', turn_id: turnId });
    }
  } else if (m.role === 'tool') {
    for (const p of m.content) {
      if (p.type !== 'tool_result') continue;
      items.push({
        id: `out_${p.tool_call_id}`,
        type: 'function_call_output',
        call_id: p.tool_call_id,
        output: p.ok ? jsonText(p.result) : null,
        error: p.ok ? null : `${p.error?.code ?? 'tool_failed'}: ${p.error?.message ?? ''}`,
        status: p.ok ? 'completed' : 'failed',
        turn_id: turnId,
      });
    }
  }
  return items;
}

/**
 * One page of a list of items by cursor: the items after the one with id `after` (none: from
 * the start), at most `limit`. `after` that names no item is 400 (`param: after`).
 */
export function pageOf<T extends { id: string | null }>(all: T[], after: string | undefined, limit: number): { data: T[]; has_more: boolean; found: boolean } {
  let start = 0;
  if (after) {
    const i = all.findIndex((x) => x.id === after);
    if (i < 0) return { data: [], has_more: false, found: false };
    start = i + 1;
  }
  const data = all.slice(start, start + limit);
  return { data, has_more: start + limit < all.length, found: true };
}
