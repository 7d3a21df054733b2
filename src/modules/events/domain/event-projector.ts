import type { ToolVisibility } from '../../agents/domain/tool';
import { Audience, PublicRunEvent, StoredRunEvent } from './run-event';

/** Visibility of a tool by name; `undefined` (unknown tool) is treated as public. */
export type ToolVisibilityLookup = (toolName: string) => ToolVisibility | undefined;

/** What replaces the payload of a private tool for members. */
export const REDACTED = Object.freeze({ redacted: true });
export const MASK = '***';
export const SECRET_KEY = /pass(word)?|secret|token|api[_-]?key|authorization/i;

type Data = Record<string, unknown>;

function isObject(v: unknown): v is Data {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Replaces the values of secret-looking keys by "***" at any depth (arrays included). */
export function maskSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(maskSecrets);
  if (!isObject(value)) return value;
  const out: Data = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_KEY.test(k) ? MASK : maskSecrets(v);
  return out;
}

function isPrivate(visibility: ToolVisibilityLookup, toolName: unknown): boolean {
  return typeof toolName === 'string' && visibility(toolName) === 'private';
}

/** A tool's arguments or result as a member sees them. */
function memberPayload(value: unknown, priv: boolean): unknown {
  return priv ? { ...REDACTED } : maskSecrets(value);
}

/** A tool error as a member sees it: the message of a private tool is redacted, code and retryable stay. */
function memberError(error: unknown, priv: boolean): unknown {
  if (!priv || !isObject(error)) return error;
  return { ...error, message: { ...REDACTED } };
}

/** Redacts `arguments`, `result` and `error.message` of a tool-related payload (only the keys present). */
function redactToolFields(data: Data, priv: boolean): Data {
  const out: Data = { ...data };
  if ('arguments' in out) out.arguments = memberPayload(out.arguments, priv);
  if ('result' in out) out.result = memberPayload(out.result, priv);
  if ('error' in out) out.error = memberError(out.error, priv);
  return out;
}

/**
 * Content parts (messages and `message.completed`) for an audience: `tool_call` arguments and
 * `tool_result` result/error are redacted for members like tool events. A `tool_result` names its
 * tool by `tool_name`, or else by the `tool_call` part with the same `tool_call_id`.
 */
export function projectContent(parts: unknown, audience: Audience, visibility: ToolVisibilityLookup): unknown {
  if (audience === 'admin' || !Array.isArray(parts)) return parts;
  const toolOfCall = new Map<string, string>();
  for (const p of parts) {
    if (isObject(p) && p.type === 'tool_call' && typeof p.tool_call_id === 'string' && typeof p.tool_name === 'string') {
      toolOfCall.set(p.tool_call_id, p.tool_name);
    }
  }
  return parts.map((p) => {
    if (!isObject(p)) return p;
    if (p.type === 'tool_call') return redactToolFields(p, isPrivate(visibility, p.tool_name));
    if (p.type === 'tool_result') {
      const name = typeof p.tool_name === 'string' ? p.tool_name : typeof p.tool_call_id === 'string' ? toolOfCall.get(p.tool_call_id) : undefined;
      return redactToolFields(p, isPrivate(visibility, name));
    }
    return p;
  });
}

/** The `data` of one event for an audience. Redacts, never drops. */
export function projectData(e: Pick<StoredRunEvent, 'type' | 'data'>, audience: Audience, visibility: ToolVisibilityLookup): Data {
  const data = e.data ?? {};
  if (audience === 'admin') return data;
  const type = e.type;
  switch (type) {
    case 'run.started':
    case 'run.waiting':
    case 'run.resumed':
    case 'run.cancel_requested':
    case 'run.input':
    case 'run.input_requested':
    case 'agent.handoff':
    case 'subagent.created':
    case 'subagent.completed':
    case 'subagent.closed':
    case 'message.started':
    case 'message.delta':
    case 'usage':
    case 'run.finished':
      return data;
    case 'message.completed':
      return 'content' in data ? { ...data, content: projectContent(data.content, audience, visibility) } : data;
    case 'tool.requested':
    case 'tool.started':
    case 'tool.completed':
    case 'tool.failed':
    case 'approval.requested':
    case 'approval.accepted':
    case 'approval.rejected':
      return redactToolFields(data, isPrivate(visibility, data.tool_name));
    default: {
      const unknownType: never = type;
      throw new Error(`no projection for event type ${String(unknownType)}`);
    }
  }
}

/** Stored event -> the public envelope of CONTRACT section 8, for the caller's audience. */
export function projectEvent(e: StoredRunEvent, audience: Audience, visibility: ToolVisibilityLookup): PublicRunEvent {
  return {
    event_id: e.id,
    run_id: e.runId,
    session_id: e.sessionId,
    sequence: e.sequence,
    session_sequence: e.sessionSequence,
    type: e.type,
    occurred_at: e.occurredAt.toISOString(),
    data: projectData(e, audience, visibility),
  };
}
