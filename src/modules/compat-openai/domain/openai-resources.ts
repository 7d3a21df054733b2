import type { WorkStatus } from '../../sessions/domain/work-status';
import type { ContentPart } from '../../agents/domain/model-provider';
import type { ResolvedAgent } from '../../agents/domain/agent-definition';
import type { ToolDefinition } from '../../agents/domain/tool';
import type { MessageProps } from '../../sessions/domain/message';
import type { SessionProps } from '../../sessions/domain/session.aggregate';
import type { RunProps } from '../../runs/domain/run.aggregate';
import { InputProblem } from './input-events';
import {
  isSubagentTool,
  jsonText,
  OpenAiItem,
  OpenAiMultiAgent,
  OpenAiSession,
  OpenAiSubagent,
  OpenAiTurn,
  RequiredAction,
  SessionSnapshot,
  SubagentNaming,
  subagentItemOf,
  toTokenUsage,
  turnErrorOf,
  turnStatusOf,
  unixSeconds,
} from './openai-shapes';

/** `multi_agent` of an agent version: its pinned subagent tools (CONTRACT 16), if any. */
export function multiAgentOf(tools: readonly ToolDefinition[]): OpenAiMultiAgent {
  for (const t of tools as ReadonlyArray<ToolDefinition & { binding?: { kind?: string; max_concurrent?: number } }>) {
    if (t.binding?.kind === 'subagents') return { enabled: true, max_concurrent_subagents: t.binding.max_concurrent ?? null };
  }
  return { enabled: false, max_concurrent_subagents: null };
}

/**
 * The id of the agent a session's calls come from on this surface: a subagent is named by its
 * own id (its child session's, as `subagents.list` shows it), a top-level session by its agent's.
 */
export function callingAgentIdOf(s: Pick<SessionProps, 'id' | 'agent' | 'parent'>): string {
  return s.parent ? s.id : s.agent.id;
}

/**
 * A child session (CONTRACT 16) as the SDK's `Subagent`: `session_id` is the top-level session
 * whose subagents it is (nested ones included), `parent_agent_id` the agent that created it,
 * `instructions` its first message (its task), `closed_at` when `close_subagent` closed it.
 */
export function toOpenAiSubagent(child: Readonly<SessionProps>, parent: Pick<SessionProps, 'id' | 'agent' | 'parent'>, rootSessionId: string, task: string | null): OpenAiSubagent {
  const closed = child.parent?.status === 'closed';
  return {
    id: child.id,
    closed_at: closed ? unixSeconds(child.updatedAt) : null,
    instructions: task === null ? null : [{ type: 'output_text', text: task }],
    name: child.parent?.name ?? null,
    object: 'agent.session.subagent',
    opened_at: unixSeconds(child.createdAt)!,
    parent_agent_id: callingAgentIdOf(parent),
    session_id: rootSessionId,
    status: closed ? 'closed' : 'active',
  };
}

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
    multi_agent: multiAgentOf(tools),
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
    multi_agent: multiAgentOf(tools),
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
/**
 * `workStatus`: the native session's (CONTRACT section 7). Without an active turn the session shows
 * its last turn's outcome: a failed, terminated or expired turn is `failed`, never `idle`
 * (a cancelled or completed one is `idle`).
 */
export function toOpenAiSession(s: Readonly<SessionProps>, agent: Record<string, unknown>, active: Readonly<RunProps> | null, workStatus?: WorkStatus): OpenAiSession {
  let status: OpenAiSession['status'] = workStatus === 'failed' || workStatus === 'terminated' || workStatus === 'expired' ? 'failed' : 'idle';
  const required: RequiredAction[] = [];
  if (active && !['completed', 'failed', 'cancelled', 'expired', 'terminated'].includes(active.status)) {
    // A run waiting for the user's input (ask_user) waits for the session's next input message: idle, as after a turn.
    status = active.status === 'waiting_for_tool' || active.status === 'waiting_for_approval' ? 'requires_action' : active.status === 'waiting_for_input' ? 'idle' : 'in_progress';
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
    subagent_id: r.state.parent?.subagent_id ?? null,
    usage: toTokenUsage(r.usage),
  };
}

/** An item and where it stands in its message: -1 for the message item, else the content part it comes from. */
export interface PlacedItem {
  part: number;
  item: OpenAiItem;
}

const ULID = '[0-9A-HJKMNP-TV-Z]{26}';
const MESSAGE_ITEM_RE = new RegExp(`^msg_(${ULID})$`);
const PART_ITEM_RE = new RegExp(`^(fc|fco)_(${ULID})_(\\d{1,4})$`);

/** The id of the item that content part `part` of message `messageId` gives (`fc_`: a function call, `fco_`: its output). */
export function partItemId(kind: 'fc' | 'fco', messageId: string, part: number): string {
  return `${kind}_${messageId.replace(/^msg_/, '')}_${part}`;
}

/**
 * Where an item id points in the history: its message and the part (-1: the message item).
 * Item ids are positions by construction (see `placedItemsOfMessage`), so a cursor needs no
 * search; null when `id` is no item id of this surface.
 */
export function itemPosition(id: string): { messageId: string; part: number; kind: 'message' | 'fc' | 'fco' } | null {
  if (MESSAGE_ITEM_RE.test(id)) return { messageId: id, part: -1, kind: 'message' };
  const m = PART_ITEM_RE.exec(id);
  return m ? { messageId: `msg_${m[2]}`, part: Number(m[3]), kind: m[1] as 'fc' | 'fco' } : null;
}

/**
 * A message as items, in order: a user message, an assistant message (its text; `commentary`
 * when it also called tools) and one `function_call` per tool call, a tool message as one
 * `function_call_output` per result. Ids are positions in the history, stable whatever the
 * message becomes and unique in the session (tool call ids come from the model and need not be):
 * the message item is the message id; a function call is `fc_<message ULID>_<part>` and an output
 * `fco_<message ULID>_<part>`, `part` being the index of the content part that holds it.
 */
export function placedItemsOfMessage(m: Readonly<MessageProps>, naming?: SubagentNaming): PlacedItem[] {
  const turnId = m.runId ?? '';
  const texts = m.content.filter((p): p is Extract<ContentPart, { type: 'text' }> => p.type === 'text').map((p) => p.text);
  const items: PlacedItem[] = [];
  const status = m.status === 'completed' ? 'completed' : m.status === 'streaming' || m.status === 'pending' ? 'in_progress' : 'incomplete';
  if (m.role === 'user') {
    items.push({ part: -1, item: { id: m.id, type: 'message', role: 'user', status, phase: null, content: texts.map((text) => ({ type: 'input_text', text })), turn_id: turnId } });
  } else if (m.role === 'assistant') {
    const calls = m.content.some((p) => p.type === 'tool_call');
    if (texts.length > 0 || !calls) {
      items.push({
        part: -1,
        item: { id: m.id, type: 'message', role: 'assistant', status, phase: calls ? 'commentary' : 'final_answer', content: [{ type: 'output_text', text: texts.join('') }], turn_id: turnId },
      });
    }
    m.content.forEach((c, part) => {
      if (c.type !== 'tool_call') return;
      // A subagent tool's call is its own item type (CONTRACT 16), same id and position.
      const sub = naming ? subagentItemOf(c.tool_name, c.arguments, partItemId('fc', m.id, part), 'completed', turnId, naming) : null;
      if (sub) {
        items.push({ part, item: sub });
        return;
      }
      items.push({
        part,
        item: { id: partItemId('fc', m.id, part), type: 'function_call', call_id: c.tool_call_id, name: c.tool_name, arguments: jsonText(c.arguments), status: 'completed', turn_id: turnId },
      });
    });
  } else if (m.role === 'tool') {
    m.content.forEach((p, part) => {
      if (p.type !== 'tool_result') return;
      // A subagent tool's result is not an item: the subagent's own turns and items are.
      if (naming && isSubagentTool(p.tool_name)) return;
      items.push({
        part,
        item: {
          id: partItemId('fco', m.id, part),
          type: 'function_call_output',
          call_id: p.tool_call_id,
          output: p.ok ? jsonText(p.result) : null,
          error: p.ok ? null : `${p.error?.code ?? 'tool_failed'}: ${p.error?.message ?? ''}`,
          status: p.ok ? 'completed' : 'failed',
          turn_id: turnId,
        },
      });
    });
  }
  return items;
}

/** Where a page of items reads its messages: the session's or one turn's, in the list's order. */
export interface ItemSource {
  /** The message a cursor names, if it is one of this list's (its content as the caller may see it). */
  message(id: string): Promise<Readonly<MessageProps> | null>;
  /** The list's messages after the message `after` (none: from the start), in the list's order, at most `limit`. */
  messages(after: string | undefined, limit: number): Promise<{ items: Readonly<MessageProps>[]; hasMore: boolean }>;
  /** How subagent items name agents (read once, only for a page that has any). */
  naming?(): Promise<SubagentNaming>;
}

/** Whether a message holds a call or result of a subagent tool (its items need the naming). */
function hasSubagentParts(m: Readonly<MessageProps>): boolean {
  return m.content.some((p) => (p.type === 'tool_call' || p.type === 'tool_result') && isSubagentTool(p.tool_name));
}

/**
 * One page of items by cursor (CONTRACT section 4 on this surface): the items after the one with
 * id `after` (none: from the start), at most `limit`, in `order`, and whether more follow. The
 * cursor is a position (message, part): the rest of its message's items, then the messages after
 * it, read a page at a time (keyset by `sequence`), until `limit + 1` items are known. `after`
 * that is no item of this list is 400 (`param: after`).
 */
export async function itemsPage(source: ItemSource, after: string | undefined, limit: number, order: 'asc' | 'desc'): Promise<{ data: OpenAiItem[]; has_more: boolean }> {
  let naming: SubagentNaming | undefined;
  const place = async (m: Readonly<MessageProps>) => {
    if (!naming && source.naming && hasSubagentParts(m)) naming = await source.naming();
    return placedItemsOfMessage(m, naming && hasSubagentParts(m) ? naming : undefined);
  };
  const inOrder = async (m: Readonly<MessageProps>) => (order === 'asc' ? await place(m) : (await place(m)).reverse());
  const out: OpenAiItem[] = [];
  let from: string | undefined;
  if (after !== undefined) {
    const at = itemPosition(after);
    const m = at ? await source.message(at.messageId) : null;
    const placed = m ? await place(m) : [];
    // The message id stays a position even when the message shows no message item (a tool-calling turn without text).
    if (!m || !at || (at.kind !== 'message' && !placed.some((p) => p.item.id === after))) {
      throw new InputProblem(`after: no item "${after}" in this list`, 'after');
    }
    out.push(...(await inOrder(m)).filter((p) => (order === 'asc' ? p.part > at.part : p.part < at.part)).map((p) => p.item));
    from = m.id;
  }
  while (out.length <= limit) {
    const page = await source.messages(from, limit + 1 - out.length);
    for (const m of page.items) out.push(...(await inOrder(m)).map((p) => p.item));
    if (!page.hasMore || page.items.length === 0) break;
    from = page.items[page.items.length - 1].id;
  }
  return { data: out.slice(0, limit), has_more: out.length > limit };
}
