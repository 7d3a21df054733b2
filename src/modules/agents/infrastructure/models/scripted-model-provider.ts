import { Injectable } from '@nestjs/common';
import { newId } from '../../../../common/ids/ids';
import { exceedsJsonDepth, JSON_MAX_DEPTH } from '../../../../common/text/json-depth';
import { ContentPart, inputChars, ModelError, ModelErrorCode, ModelMessage, ModelProvider, ModelRequest, ModelStreamEvent } from '../../domain/model-provider';
import { AbortedError, estimateTokens, sleep, withDeadline } from '../abort';

/** One model turn of a `!script` (CONTRACT section 9). */
export interface ScriptTurn {
  text?: string;
  chunk_size?: number;
  delay_ms?: number;
  sleep_ms?: number;
  tool_calls?: Array<{ id?: string; name: string; arguments: unknown }>;
  error?: { code: ModelErrorCode; message?: string; retryable?: boolean };
}

export const SCRIPT_PREFIX = '!script ';
const DEFAULT_CHUNK = 4;
const MAX_WAIT_MS = 3_600_000;
const MODEL_ERROR_CODES: ModelErrorCode[] = ['model_error', 'model_timeout', 'model_refusal'];
const TURN_KEYS = new Set(['text', 'chunk_size', 'delay_ms', 'sleep_ms', 'tool_calls', 'error']);
export const ORDER_ID_RE = /\bO-\d{4,}\b/;
const WEATHER_RE = /\bweather\s+in\s+([^?!.,;:\n]+)/i;
const TIME_RE = /\btime\b/i;

type ToolResultPart = Extract<ContentPart, { type: 'tool_result' }>;

/** The concatenated text parts of a message. */
export function messageText(m: ModelMessage): string {
  return m.content
    .filter((p): p is Extract<ContentPart, { type: 'text' }> => p.type === 'text')
    .map((p) => p.text)
    .join('\n');
}

function isWholeNumber(v: unknown, min: number, max: number): boolean {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
}

/** Validates one scripted turn; returns a problem description or null. */
function turnProblem(turn: unknown, index: number): string | null {
  const at = `turn ${index}`;
  if (turn === null || typeof turn !== 'object' || Array.isArray(turn)) return `${at} must be an object`;
  const t = turn as Record<string, unknown>;
  const unknown = Object.keys(t).filter((k) => !TURN_KEYS.has(k));
  if (unknown.length) return `${at} has unknown keys: ${unknown.join(', ')}`;
  if (t.text !== undefined && typeof t.text !== 'string') return `${at}: text must be a string`;
  if (t.chunk_size !== undefined && !isWholeNumber(t.chunk_size, 1, 1_000_000)) return `${at}: chunk_size must be a positive integer`;
  if (t.delay_ms !== undefined && !isWholeNumber(t.delay_ms, 0, MAX_WAIT_MS)) return `${at}: delay_ms must be an integer 0..${MAX_WAIT_MS}`;
  if (t.sleep_ms !== undefined && !isWholeNumber(t.sleep_ms, 0, MAX_WAIT_MS)) return `${at}: sleep_ms must be an integer 0..${MAX_WAIT_MS}`;
  if (t.tool_calls !== undefined) {
    if (!Array.isArray(t.tool_calls)) return `${at}: tool_calls must be an array`;
    for (const [i, c] of t.tool_calls.entries()) {
      if (c === null || typeof c !== 'object' || Array.isArray(c)) return `${at}: tool_calls[${i}] must be an object`;
      const call = c as Record<string, unknown>;
      if (typeof call.name !== 'string' || call.name === '') return `${at}: tool_calls[${i}].name must be a non-empty string`;
      if (call.id !== undefined && (typeof call.id !== 'string' || call.id === '')) return `${at}: tool_calls[${i}].id must be a non-empty string`;
    }
  }
  if (t.error !== undefined) {
    const e = t.error as Record<string, unknown> | null;
    if (e === null || typeof e !== 'object' || Array.isArray(e)) return `${at}: error must be an object`;
    if (!MODEL_ERROR_CODES.includes(e.code as ModelErrorCode)) return `${at}: error.code must be one of ${MODEL_ERROR_CODES.join(', ')}`;
    if (e.message !== undefined && typeof e.message !== 'string') return `${at}: error.message must be a string`;
    if (e.retryable !== undefined && typeof e.retryable !== 'boolean') return `${at}: error.retryable must be a boolean`;
  }
  return null;
}

/** Parses the JSON after `!script `: the turns, or a description of what is wrong. */
export function parseScript(source: string): { turns: ScriptTurn[] } | { problem: string } {
  let raw: unknown;
  if (exceedsJsonDepth(source)) return { problem: `the script nests deeper than ${JSON_MAX_DEPTH} levels` };
  try {
    raw = JSON.parse(source);
  } catch (err) {
    return { problem: `the script is not valid JSON (${(err as Error).message})` };
  }
  if (!Array.isArray(raw)) return { problem: 'the script must be a JSON array of turns' };
  for (const [i, turn] of raw.entries()) {
    const problem = turnProblem(turn, i);
    if (problem) return { problem };
  }
  return {
    turns: (raw as Array<Record<string, unknown>>).map((t) => ({
      ...(t as ScriptTurn),
      tool_calls: (t.tool_calls as ScriptTurn['tool_calls'] | undefined)?.map((c) => ({ ...c, arguments: c.arguments ?? {} })),
    })),
  };
}

function asRecord(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** The latest result of `toolName` among the messages after the newest user message. */
function latestResult(after: ModelMessage[], toolName: string): ToolResultPart | null {
  const namesById = new Map<string, string>();
  let found: ToolResultPart | null = null;
  for (const m of after) {
    for (const p of m.content) {
      if (p.type === 'tool_call') namesById.set(p.tool_call_id, p.tool_name);
      if (p.type === 'tool_result' && (p.tool_name ?? namesById.get(p.tool_call_id)) === toolName) found = p;
    }
  }
  return found;
}

function failure(r: ToolResultPart): string {
  return r.error ? `${r.error.code}: ${r.error.message}` : 'unknown error';
}

/**
 * The built-in scenarios (CONTRACT section 9). Decides the next turn only from the messages,
 * so it is deterministic and resumes correctly after a crash or an approval.
 */
export function scenarioTurn(request: Pick<ModelRequest, 'messages' | 'tools' | 'attachments'>): ScriptTurn {
  const messages = request.messages;
  let userIdx = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === 'user') {
      userIdx = i;
      break;
    }
  }
  const userText = userIdx >= 0 ? messageText(messages[userIdx]) : '';
  const after = messages.slice(userIdx + 1);
  const offered = new Set(request.tools.map((t) => t.name));
  const call = (name: string, args: Record<string, unknown>): ScriptTurn =>
    offered.has(name) ? { tool_calls: [{ name, arguments: args }] } : { text: `I cannot do that here: the ${name} tool is not available to me.` };

  const orderId = ORDER_ID_RE.exec(userText)?.[0];
  if (orderId) {
    const order = latestResult(after, 'get_order');
    if (!order) return call('get_order', { order_id: orderId });
    if (!order.ok) return { text: `I could not look up order ${orderId} (${failure(order)}).` };
    const o = asRecord(order.result);
    if (o.status === 'not_found') return { text: `I could not find an order with the id ${orderId}. Please check the order number.` };
    if (o.shipped === true) {
      const when = typeof o.shipped_at === 'string' ? ` on ${o.shipped_at.slice(0, 10)}` : '';
      return { text: `Order ${orderId} has already shipped${when}, so no support ticket is needed.` };
    }
    if (o.paid === true) {
      const ticket = latestResult(after, 'create_ticket');
      if (!ticket) return call('create_ticket', { order_id: orderId, reason: `Order ${orderId} is paid but has not shipped yet.` });
      if (!ticket.ok) return { text: `Order ${orderId} is paid but has not shipped yet. I did not open a support ticket (${failure(ticket)}).` };
      const t = asRecord(ticket.result);
      return { text: `Order ${orderId} is paid but has not shipped yet, so I opened support ticket ${String(t.ticket_id)}. Our team will follow up.` };
    }
    return { text: `Order ${orderId} has the status "${String(o.status)}"; it is not paid yet, so no support ticket is needed.` };
  }

  const weather = WEATHER_RE.exec(userText);
  if (weather) {
    const location = weather[1]
      .replace(/\s+(today|tonight|tomorrow|right now|now|please)\s*$/i, '')
      .trim()
      .slice(0, 100);
    const result = latestResult(after, 'get_weather');
    if (!result) return call('get_weather', { location });
    if (!result.ok) return { text: `I could not get the weather for ${location} (${failure(result)}).` };
    const w = asRecord(result.result);
    return {
      text: `The weather in ${String(w.location ?? location)} is ${String(w.conditions)}, ${String(w.temperature_c)}°C (humidity ${String(w.humidity_pct)}%, wind ${String(w.wind_kph)} km/h).`,
    };
  }

  if (TIME_RE.test(userText)) {
    const result = latestResult(after, 'get_time');
    if (!result) return call('get_time', {});
    if (!result.ok) return { text: `I could not get the time (${failure(result)}).` };
    const t = asRecord(result.result);
    return { text: `The current time is ${String(t.iso)} (${String(t.timezone)}).` };
  }

  if (userText.trim() === '' && request.attachments.length > 0) {
    return { text: `I received ${request.attachments.map((a) => `${a.filename} (${a.media_type}, ${a.size_bytes} bytes)`).join(', ')}.` };
  }
  return { text: userText };
}

/** The next turn for a request: the script's turn #callIndex, "done" after it, or the scenario. */
export function turnFor(request: ModelRequest): ScriptTurn {
  const user = [...request.messages].reverse().find((m) => m.role === 'user');
  const text = user ? messageText(user) : '';
  const trimmed = text.trimStart();
  if (!trimmed.startsWith(SCRIPT_PREFIX)) return scenarioTurn(request);
  const parsed = parseScript(trimmed.slice(SCRIPT_PREFIX.length));
  if ('problem' in parsed) return { text: `The script is invalid: ${parsed.problem}.` };
  const turn = parsed.turns[request.callIndex] ?? { text: 'done' };
  return turn.text?.includes(LAST_TOOL_RESULT) ? { ...turn, text: turn.text.split(LAST_TOOL_RESULT).join(lastToolResult(request.messages)) } : turn;
}

/** In a script turn's text: the JSON of the newest tool result (e.g. a wait_for_subagents answer), so a test can see what the model read. */
export const LAST_TOOL_RESULT = '{{last_tool_result}}';

function lastToolResult(messages: readonly ModelMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const parts = messages[i].content.filter((p): p is ToolResultPart => p.type === 'tool_result');
    const r = parts[parts.length - 1];
    if (r) return JSON.stringify(r.ok ? (r.result ?? null) : { error: r.error ?? null });
  }
  return 'null';
}

export { inputChars };

function chunks(text: string, size: number): string[] {
  const chars = Array.from(text); // code points: a delta never splits a surrogate pair
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

/** The deterministic, offline `scripted` model (CONTRACT section 9). */
@Injectable()
export class ScriptedModelProvider extends ModelProvider {
  async *stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
    const guard = withDeadline(request.signal, request.deadline);
    try {
      if (guard.signal.aborted) throw new AbortedError('aborted');
      const turn = turnFor(request);
      if (turn.sleep_ms) await sleep(turn.sleep_ms, guard.signal);
      let outChars = 0;
      if (turn.text) {
        const size = turn.chunk_size ?? DEFAULT_CHUNK;
        const parts = chunks(turn.text, size);
        for (const [i, delta] of parts.entries()) {
          if (i > 0 && turn.delay_ms) await sleep(turn.delay_ms, guard.signal);
          if (guard.signal.aborted) throw new AbortedError('aborted');
          outChars += delta.length;
          yield { type: 'text_delta', text: delta };
        }
      }
      for (const c of turn.tool_calls ?? []) {
        if (guard.signal.aborted) throw new AbortedError('aborted');
        outChars += JSON.stringify({ name: c.name, arguments: c.arguments }).length;
        yield { type: 'tool_call', id: c.id ?? newId('call'), name: c.name, arguments: c.arguments };
      }
      if (turn.error) throw new ModelError(turn.error.code, turn.error.message ?? `scripted ${turn.error.code}`, turn.error.retryable ?? false);
      yield { type: 'usage', input_tokens: estimateTokens(inputChars(request.messages)), output_tokens: estimateTokens(outChars) };
    } catch (err) {
      if (err instanceof AbortedError || guard.signal.aborted) {
        if (err instanceof ModelError) throw err;
        throw new ModelError('model_timeout', guard.deadlineHit() ? 'the model call passed the run deadline' : 'the model call was aborted');
      }
      throw err;
    } finally {
      guard.dispose();
    }
  }
}
