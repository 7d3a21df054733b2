import type { PublicRunEvent } from '../../events/domain/run-event';
import {
  AgentSessionEvent,
  isSubagentTool,
  jsonText,
  OpenAiSubagent,
  subagentItemOf,
  SubagentNaming,
  OpenAiItem,
  OpenAiSession,
  OpenAiTokenUsage,
  OpenAiTurn,
  RequiredAction,
  SessionSnapshot,
  SessionStatus,
  toTokenUsage,
  turnErrorOf,
  turnStatusOf,
  unixSeconds,
} from './openai-shapes';
import { partItemId } from './openai-resources';

type Data = Record<string, unknown>;

interface CallState {
  /** The item id: `fc_<message ULID>_<part>` of the assistant message that made the call (as items lists name it). */
  itemId: string;
  name: string;
  arguments: string;
  outputIndex: number;
  client: boolean;
  done: boolean;
  approvalId?: string;
  /** A subagent tool's call (CONTRACT 16): its own item type, no output item. */
  subagent: boolean;
}

/** A subagent this stream knows (its session's, or created while it runs), with the turn that created it. */
export interface KnownSubagent {
  subagent: OpenAiSubagent;
  runId: string;
}

/** What the stream says about subagents (CONTRACT 16): who this session's calls come from, and its subagents so far. */
export interface ProjectionSubagents {
  /** The top-level session (a subagent's events name it as `session_id`). */
  rootSessionId: string;
  /** This session's subagent id when it is one (its turns' `subagent_id`), else null. */
  subagentId: string | null;
  /** The id of the agent this session's calls come from (`sender_agent_id`). */
  sender: string;
  known: KnownSubagent[];
}

interface TurnState {
  turn: OpenAiTurn;
  nextOutputIndex: number;
  messages: Map<string, { outputIndex: number; text: string; added: boolean }>;
  calls: Map<string, CallState>;
  /** Call id -> item id, from the completed assistant message that holds the call (it precedes `tool.requested`). */
  callItemIds: Map<string, string>;
  /** `ask_user`'s open question (run.input_requested), until the run resumes with the answer. */
  inputRequest?: { callId: string; question: string };
}

/**
 * Native session events -> the SDK's `agent.session.*` events (a pure fold: the same events
 * always give the same output, event ids included, so a replay is identical to what was sent).
 * One native event gives zero or more frames; `apply` returns them in the order the SDK's
 * `TurnState` and result collector expect: `turn.created` (`subagent_id`: null, or the
 * subagent's id on a subagent's own stream) and
 * `turn.in_progress` then `session.in_progress`; items added/done for assistant messages (text
 * deltas between), function calls and their outputs; `session.requires_action` with the
 * pending client calls (or approvals); the turn's terminal event, then `session.idle`.
 * User messages are not emitted as turn items (the SDK would count them as output), but are
 * listed as items. Item ids are those of the items lists (a message: its id; a function call:
 * `fc_<message ULID>_<part>`), except a function call output's: the event that reports it does
 * not name the tool message that stores it (`fco_<message ULID>_<part>` in lists), so the stream
 * names it `out_<call_id>`; `call_id` pairs it with its call in both. Subagents (CONTRACT 16):
 * a call of `create_subagent`, `send_subagent_input`, `wait_for_subagents` or `close_subagent`
 * is an item of the SDK's own type (`create_subagent_call`, ...; no output item, as in the items
 * lists), and native `subagent.created` / `subagent.closed` are `agent.session.subagent.created`
 * / `.closed` with the SDK's `Subagent`.
 */
export class AgentSessionProjection {
  private current: TurnState | null = null;
  private usage: OpenAiTokenUsage | null = null;
  private readonly subagents: ProjectionSubagents;
  private readonly known = new Map<string, KnownSubagent>();

  constructor(
    private readonly session: SessionSnapshot,
    private readonly isClientTool: (name: string) => boolean,
    subagents?: ProjectionSubagents,
  ) {
    this.subagents = subagents ?? { rootSessionId: session.id, subagentId: null, sender: String(session.agent.id ?? ''), known: [] };
    for (const k of this.subagents.known) this.known.set(k.subagent.id, k);
  }

  /** Subagent arguments (ids or names) as subagent ids, from the subagents this stream knows. */
  private naming(): SubagentNaming {
    const known = [...this.known.values()];
    return {
      sender: this.subagents.sender,
      resolve: (turnId, ref) => {
        if (ref.startsWith('sess_')) return ref;
        const named = known.filter((k) => k.subagent.name === ref);
        return (named.find((k) => k.runId === turnId) ?? named[named.length - 1])?.subagent.id ?? ref;
      },
      createdBy: (turnId) => known.filter((k) => k.runId === turnId).map((k) => k.subagent.id),
    };
  }

  apply(e: PublicRunEvent): AgentSessionEvent[] {
    const out: AgentSessionEvent[] = [];
    const emit = (type: string, body: Data) => out.push({ event_id: `${e.event_id}_${out.length}`, type, ...body } as AgentSessionEvent);
    const at = unixSeconds(e.occurred_at)!;
    const d = e.data as Data;

    if (e.type === 'run.started') {
      this.usage = null;
      this.current = this.newTurn(e.run_id, at, 'queued');
      emit('agent.session.turn.created', this.turnBody());
      this.current.turn = { ...this.current.turn, status: 'in_progress', started_at: at };
      emit('agent.session.turn.in_progress', this.turnBody());
      emit('agent.session.in_progress', { session: this.sessionObject('in_progress', [], at) });
      return out;
    }
    // A stream that starts within a run it never saw begin (the feed replays the run's history
    // first, so only a run whose start was purged) follows it from here.
    if (!this.current || this.current.turn.id !== e.run_id) this.current = this.newTurn(e.run_id, at, 'in_progress');
    const t = this.current;
    const base = { session_id: this.session.id, turn_id: t.turn.id };

    switch (e.type) {
      case 'run.resumed': {
        t.turn = { ...t.turn, status: 'in_progress' };
        // Answered by an input message (ask_user): the SDK's stream of that input follows the turn
        // from here, so the turn is announced again (same id) before it goes on.
        if (t.inputRequest) {
          t.inputRequest = undefined;
          t.turn = { ...t.turn, completed_at: null };
          emit('agent.session.turn.created', this.turnBody());
        }
        emit('agent.session.turn.in_progress', this.turnBody());
        emit('agent.session.in_progress', { session: this.sessionObject('in_progress', [], at) });
        break;
      }
      case 'run.waiting': {
        if (d.status === 'waiting_for_input' && t.inputRequest) {
          // ask_user (CONTRACT 17): the question is the turn's answer so far and the session waits
          // for its next input message, which answers it (the same turn then goes on).
          const id = `ask_${t.inputRequest.callId}`;
          const index = t.nextOutputIndex++;
          const text = t.inputRequest.question;
          emit('agent.session.turn.item.added', { ...base, output_index: index, item: this.messageItem(id, '', 'in_progress', null) });
          emit('agent.session.turn.output_text.delta', { ...base, item_id: id, output_index: index, content_index: 0, delta: text });
          emit('agent.session.turn.output_text.done', { ...base, item_id: id, output_index: index, content_index: 0, text });
          emit('agent.session.turn.item.done', { ...base, output_index: index, item: this.messageItem(id, text, 'completed', 'final_answer') });
          t.turn = { ...t.turn, status: 'completed', completed_at: at };
          emit('agent.session.turn.completed', { ...this.turnBody(), usage: this.usage });
          emit('agent.session.idle', { session: this.sessionObject('idle', [], at) });
          break;
        }
        // Waiting for its subagents (CONTRACT 16), the turn is still working: nothing is asked of the client.
        if (d.status === 'waiting_for_subagents') break;
        t.turn = { ...t.turn, status: 'waiting' };
        emit('agent.session.requires_action', { session: this.sessionObject('requires_action', this.requiredActions(), at) });
        break;
      }
      case 'message.started': {
        if (d.role !== 'assistant') break;
        const id = String(d.message_id);
        const m = { outputIndex: t.nextOutputIndex++, text: '', added: true };
        t.messages.set(id, m);
        emit('agent.session.turn.item.added', { ...base, output_index: m.outputIndex, item: this.messageItem(id, '', 'in_progress', null) });
        break;
      }
      case 'message.delta': {
        const id = String(d.message_id);
        const m = t.messages.get(id);
        if (!m) break;
        const delta = String(d.delta ?? '');
        m.text += delta;
        emit('agent.session.turn.output_text.delta', { ...base, item_id: id, output_index: m.outputIndex, content_index: 0, delta });
        break;
      }
      case 'message.completed': {
        const id = String(d.message_id);
        const content = Array.isArray(d.content) ? (d.content as Data[]) : [];
        let m = t.messages.get(id);
        if (!m) {
          // Only assistant messages have deltas and tool calls; others (tool results) are not output.
          if (content.some((p) => p.type === 'tool_result')) break;
          m = { outputIndex: t.nextOutputIndex++, text: '', added: true };
          t.messages.set(id, m);
          emit('agent.session.turn.item.added', { ...base, output_index: m.outputIndex, item: this.messageItem(id, '', 'in_progress', null) });
        }
        const text = content
          .filter((p) => p.type === 'text')
          .map((p) => String(p.text ?? ''))
          .join('');
        const phase = content.some((p) => p.type === 'tool_call') ? 'commentary' : 'final_answer';
        content.forEach((p, part) => {
          if (p.type === 'tool_call' && typeof p.tool_call_id === 'string') t.callItemIds.set(p.tool_call_id, partItemId('fc', id, part));
        });
        emit('agent.session.turn.output_text.done', { ...base, item_id: id, output_index: m.outputIndex, content_index: 0, text });
        emit('agent.session.turn.item.done', { ...base, output_index: m.outputIndex, item: this.messageItem(id, text, 'completed', phase) });
        break;
      }
      case 'tool.requested': {
        const callId = String(d.tool_call_id);
        const name = String(d.tool_name);
        const c: CallState = {
          itemId: t.callItemIds.get(callId) ?? callId,
          name,
          arguments: jsonText(d.arguments),
          outputIndex: t.nextOutputIndex++,
          client: this.isClientTool(name),
          done: false,
          subagent: isSubagentTool(name),
        };
        t.calls.set(callId, c);
        emit('agent.session.turn.item.added', { ...base, output_index: c.outputIndex, item: this.callItem(callId, c, 'in_progress') });
        break;
      }
      case 'run.input_requested': {
        t.inputRequest = { callId: String(d.tool_call_id), question: String(d.question ?? '') };
        break;
      }
      case 'approval.requested': {
        const c = t.calls.get(String(d.tool_call_id));
        if (c) c.approvalId = String(d.approval_id);
        break;
      }
      case 'approval.accepted':
      case 'approval.rejected': {
        const c = t.calls.get(String(d.tool_call_id));
        if (c) c.approvalId = undefined;
        break;
      }
      case 'tool.completed':
      case 'tool.failed': {
        const callId = String(d.tool_call_id);
        const c = t.calls.get(callId);
        if (!c) break;
        c.done = true;
        c.approvalId = undefined;
        const ok = e.type === 'tool.completed';
        emit('agent.session.turn.item.done', { ...base, output_index: c.outputIndex, item: this.callItem(callId, c, ok ? 'completed' : 'failed') });
        if (c.subagent) break; // its result is the subagent's own turns, not an item
        const err = d.error as Data | undefined;
        const message = err ? (typeof err.message === 'string' ? err.message : JSON.stringify(err.message ?? null)) : null;
        const output: OpenAiItem = {
          id: `out_${callId}`,
          type: 'function_call_output',
          call_id: callId,
          output: ok ? jsonText(d.result) : null,
          error: ok ? null : `${String(err?.code ?? 'tool_failed')}: ${message ?? ''}`,
          status: ok ? 'completed' : 'failed',
          turn_id: t.turn.id,
        };
        const index = t.nextOutputIndex++;
        emit('agent.session.turn.item.added', { ...base, output_index: index, item: output });
        emit('agent.session.turn.item.done', { ...base, output_index: index, item: output });
        break;
      }
      case 'subagent.created': {
        const call = t.calls.get(String(d.tool_call_id));
        const args = call ? (safeJson(call.arguments) as Data | null) : null;
        const task = typeof args?.instructions === 'string' ? args.instructions : null;
        const subagent: OpenAiSubagent = {
          id: String(d.subagent_id),
          closed_at: null,
          instructions: task === null ? null : [{ type: 'output_text', text: task }],
          name: typeof d.name === 'string' ? d.name : null,
          object: 'agent.session.subagent',
          opened_at: at,
          parent_agent_id: this.subagents.sender,
          session_id: this.subagents.rootSessionId,
          status: 'active',
        };
        this.known.set(subagent.id, { subagent, runId: t.turn.id });
        emit('agent.session.subagent.created', { subagent });
        break;
      }
      case 'subagent.closed': {
        const id = String(d.subagent_id);
        const k = this.known.get(id);
        const subagent: OpenAiSubagent = {
          ...(k?.subagent ?? { id, instructions: null, name: null, object: 'agent.session.subagent', opened_at: at, parent_agent_id: this.subagents.sender, session_id: this.subagents.rootSessionId }),
          closed_at: at,
          status: 'closed',
        } as OpenAiSubagent;
        this.known.set(id, { subagent, runId: k?.runId ?? t.turn.id });
        emit('agent.session.subagent.closed', { subagent });
        break;
      }
      case 'usage': {
        this.usage = toTokenUsage(d as never);
        t.turn = { ...t.turn, usage: this.usage };
        break;
      }
      case 'run.finished': {
        const status = String(d.status);
        this.usage = toTokenUsage(d.usage as never) ?? this.usage;
        t.turn = {
          ...t.turn,
          status: turnStatusOf(status),
          completed_at: at,
          usage: this.usage,
          error: turnErrorOf(status, d.error as never, d.termination_reason as string | null),
        };
        const type = t.turn.status === 'completed' ? 'agent.session.turn.completed' : t.turn.status === 'cancelled' ? 'agent.session.turn.cancelled' : 'agent.session.turn.failed';
        emit(type, { ...this.turnBody(), usage: this.usage });
        emit('agent.session.idle', { session: this.sessionObject('idle', [], at) });
        this.current = null;
        break;
      }
      default:
        break; // run.cancel_requested, run.input, tool.started: nothing to say on this surface
    }
    return out;
  }

  /** The pending client function calls and approvals of the current turn. */
  requiredActions(): RequiredAction[] {
    const t = this.current;
    if (!t) return [];
    const actions: RequiredAction[] = [];
    for (const [callId, c] of t.calls) {
      if (c.done) continue;
      if (c.approvalId) actions.push({ type: 'approval_request', turn_id: t.turn.id, approval_id: c.approvalId, call_id: callId, name: c.name, arguments: c.arguments });
      else if (c.client) actions.push({ type: 'function_call', turn_id: t.turn.id, call_id: callId, name: c.name, arguments: c.arguments });
    }
    return actions;
  }

  private newTurn(runId: string, at: number, status: OpenAiTurn['status']): TurnState {
    return {
      turn: {
        id: runId,
        agent_id: String(this.session.agent.id ?? ''),
        completed_at: null,
        created_at: at,
        error: null,
        object: 'agent.session.turn',
        session_id: this.session.id,
        started_at: status === 'queued' ? null : at,
        status,
        subagent_id: this.subagents.subagentId,
        usage: null,
      },
      nextOutputIndex: 0,
      messages: new Map(),
      calls: new Map(),
      callItemIds: new Map(),
    };
  }

  private turnBody(): Data {
    const t = this.current!;
    return { session_id: this.session.id, turn_id: t.turn.id, turn: { ...t.turn } };
  }

  private sessionObject(status: SessionStatus, required: RequiredAction[], at: number): OpenAiSession {
    return {
      ...this.session,
      object: 'agent.session',
      environment: { type: 'none' },
      error: null,
      last_active_at: at,
      required_actions: required,
      status,
      usage: this.usage,
      vault_ids: [],
    };
  }

  private messageItem(id: string, text: string, status: 'in_progress' | 'completed', phase: 'commentary' | 'final_answer' | null): OpenAiItem {
    return { id, type: 'message', role: 'assistant', status, phase, content: text === '' && status === 'in_progress' ? [] : [{ type: 'output_text', text }], turn_id: this.current!.turn.id };
  }

  private callItem(callId: string, c: CallState, status: 'in_progress' | 'completed' | 'failed'): OpenAiItem {
    const turnId = this.current!.turn.id;
    if (c.subagent) {
      const item = subagentItemOf(c.name, c.arguments, c.itemId, status, turnId, this.naming());
      if (item) return item;
    }
    return { id: c.itemId, type: 'function_call', call_id: callId, name: c.name, arguments: c.arguments, status, turn_id: this.current!.turn.id };
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
