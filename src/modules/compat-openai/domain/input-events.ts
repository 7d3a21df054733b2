import type { ContentPart } from '../../agents/domain/model-provider';

/** The input events of `POST /agents/sessions/{id}/events` this adapter accepts, parsed. */
export type InputEvent =
  | { type: 'message'; content: ContentPart[] }
  | { type: 'cancel' }
  | { type: 'tool_result'; turnId: string; callId: string; success: boolean; output: unknown; error: string | null }
  /** Our extension (CONTRACT section 15). */
  | { type: 'approval_result'; approvalId: string; decision: 'approve' | 'reject'; reason: string | null };

/** A request problem: the message and the parameter it concerns (the error's `param`). */
export class InputProblem extends Error {
  constructor(
    message: string,
    readonly param: string,
  ) {
    super(message);
  }
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const SUPPORTED = [
  'agent.session.input.message',
  'agent.session.input.cancel',
  'agent.session.input.tool_result',
  'agent.session.input.approval_result',
];

/** `input` of a message event (or of session creation): messages of role user with text parts. */
export function parseMessages(input: unknown, param: string): ContentPart[] {
  if (typeof input === 'string') {
    if (input.length === 0) throw new InputProblem('input must not be empty', param);
    return [{ type: 'text', text: input }];
  }
  if (!Array.isArray(input) || input.length === 0) throw new InputProblem('input must be a non-empty array of user messages', param);
  const parts: ContentPart[] = [];
  input.forEach((m, i) => {
    if (!isObj(m) || m.role !== 'user') throw new InputProblem(`${param}[${i}] must be a message with role "user"`, `${param}[${i}].role`);
    if (m.type !== undefined && m.type !== 'message') throw new InputProblem(`${param}[${i}].type must be "message"`, `${param}[${i}].type`);
    if (!Array.isArray(m.content) || m.content.length === 0) throw new InputProblem(`${param}[${i}].content must be a non-empty array`, `${param}[${i}].content`);
    m.content.forEach((c, j) => {
      const where = `${param}[${i}].content[${j}]`;
      if (!isObj(c)) throw new InputProblem(`${where} must be an object`, where);
      if (c.type === 'input_text') {
        if (typeof c.text !== 'string' || c.text.length === 0) throw new InputProblem(`${where}.text must be a non-empty string`, `${where}.text`);
        parts.push({ type: 'text', text: c.text });
      } else {
        throw new InputProblem(`${where}.type "${String(c.type)}" is not supported here: only input_text`, `${where}.type`);
      }
    });
  });
  return parts;
}

/** Parses and checks every event before anything is done (a bad batch does nothing). */
export function parseInputEvents(body: unknown): InputEvent[] {
  if (!isObj(body) || !Array.isArray(body.events) || body.events.length === 0) throw new InputProblem('events must be a non-empty array of input events', 'events');
  if (body.events.length > 100) throw new InputProblem('at most 100 events per request', 'events');
  return body.events.map((e, i): InputEvent => {
    const p = `events[${i}]`;
    if (!isObj(e)) throw new InputProblem(`${p} must be an object`, p);
    switch (e.type) {
      case 'agent.session.input.message':
        return { type: 'message', content: parseMessages(e.input, `${p}.input`) };
      case 'agent.session.input.cancel':
        return { type: 'cancel' };
      case 'agent.session.input.tool_result': {
        if (typeof e.turn_id !== 'string' || e.turn_id === '') throw new InputProblem(`${p}.turn_id is required`, `${p}.turn_id`);
        if (typeof e.call_id !== 'string' || e.call_id === '') throw new InputProblem(`${p}.call_id is required`, `${p}.call_id`);
        if (typeof e.success !== 'boolean') throw new InputProblem(`${p}.success must be a boolean`, `${p}.success`);
        if (e.error !== undefined && e.error !== null && typeof e.error !== 'string') throw new InputProblem(`${p}.error must be a string`, `${p}.error`);
        return { type: 'tool_result', turnId: e.turn_id, callId: e.call_id, success: e.success, output: e.output ?? null, error: (e.error as string | null | undefined) ?? null };
      }
      case 'agent.session.input.approval_result': {
        if (typeof e.approval_id !== 'string' || e.approval_id === '') throw new InputProblem(`${p}.approval_id is required`, `${p}.approval_id`);
        if (e.decision !== 'approve' && e.decision !== 'reject') throw new InputProblem(`${p}.decision must be "approve" or "reject"`, `${p}.decision`);
        if (e.reason !== undefined && e.reason !== null && typeof e.reason !== 'string') throw new InputProblem(`${p}.reason must be a string`, `${p}.reason`);
        return { type: 'approval_result', approvalId: e.approval_id, decision: e.decision, reason: (e.reason as string | null | undefined) ?? null };
      }
      default:
        throw new InputProblem(`${p}.type "${String(e.type)}" is not supported; supported: ${SUPPORTED.join(', ')}`, `${p}.type`);
    }
  });
}
