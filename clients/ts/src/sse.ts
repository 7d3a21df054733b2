/**
 * Server-sent events over `fetch` (so the Authorization header can be sent), with typed events
 * and automatic resume: on a dropped connection it reconnects with `Last-Event-ID` = the last
 * `id` it received (the run's `sequence`, or `session_sequence` for session streams), with
 * exponential backoff. The server replays exactly the events after that id, so the consumer sees
 * every event once, in order. Run streams end after `run.finished`.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { AgentApiClient, ApiError, type RunEventEnvelope, type RunStatus } from './client';

type Json = unknown;
type Envelope = Omit<RunEventEnvelope, 'type' | 'data'>;
export type EventType = RunEventEnvelope['type'];

export interface UsageData {
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens?: number;
  model_calls: number;
  tool_calls: number;
}
export interface RunErrorData {
  code: string;
  message: string;
  retryable?: boolean;
}

/** `data` of each event type (CONTRACT section 8). */
export interface EventDataMap {
  'run.started': { status: RunStatus };
  'run.waiting': { status: RunStatus; reason: string };
  'run.resumed': { status: RunStatus };
  'run.cancel_requested': { requested_by: string };
  'run.input': { message_id: string };
  'message.started': { message_id: string; role: string };
  'message.delta': { message_id: string; content_index: number; delta: string };
  'message.completed': { message_id: string; content: Array<Record<string, Json>> };
  'tool.requested': { tool_call_id: string; tool_name: string; arguments: Json; risk: string };
  'tool.started': { tool_call_id: string; tool_name: string; attempt: number };
  'tool.completed': { tool_call_id: string; tool_name: string; result: Json; duration_ms: number };
  'tool.failed': { tool_call_id: string; tool_name: string; error: RunErrorData; duration_ms: number };
  'approval.requested': { approval_id: string; tool_call_id: string; tool_name: string; arguments: Json; risk: string; expires_at: string };
  'approval.accepted': { approval_id: string; tool_call_id: string; decided_by: string; reason: string | null };
  'approval.rejected': { approval_id: string; tool_call_id: string; decided_by: string; reason: string | null };
  usage: UsageData;
  'run.finished': { status: RunStatus; final_message_id: string | null; termination_reason: string | null; error: RunErrorData | null; usage: UsageData };
}

// Compile-time drift guard: the map covers exactly the event types of the OpenAPI document.
type Exact<A, B> = [A] extends [B] ? ([B] extends [A] ? true : never) : never;
const eventTypesMatch: Exact<keyof EventDataMap, EventType> = true;
void eventTypesMatch;

/** A typed event: narrow on `type` to get its `data`. */
export type AgentEvent = { [K in EventType]: Envelope & { type: K; data: EventDataMap[K] } }[EventType];
export type EventOf<K extends EventType> = Extract<AgentEvent, { type: K }>;

export interface ReconnectInfo {
  /** Consecutive failed attempts so far (1 for the first reconnect). */
  attempt: number;
  /** The id resumed from (`Last-Event-ID`), null when nothing was received yet. */
  lastEventId: string | null;
  delayMs: number;
  reason: string;
}

export interface StreamOptions {
  /** Resume after this id (sent as `Last-Event-ID`). */
  lastEventId?: string | number | null;
  signal?: AbortSignal;
  /** Stop after `run.finished` (default true for run streams, false for session streams). */
  stopAfterFinished?: boolean;
  /** First reconnect delay (default 250 ms); doubles per consecutive failure up to maxDelayMs. */
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** Give up after this many consecutive failed connections (default 8); the error is thrown. */
  maxAttempts?: number;
  onReconnect?: (info: ReconnectInfo) => void;
  /** Called for each `: comment` line (keep-alives). */
  onComment?: (comment: string) => void;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });

/** Events of one run; ends after `run.finished`. */
export function streamRunEvents(client: AgentApiClient, runId: string, opts: StreamOptions = {}): AsyncGenerator<AgentEvent> {
  return streamEvents(client, `/v1/runs/${encodeURIComponent(runId)}/events`, { stopAfterFinished: true, ...opts });
}

/** Events of every run of a session (cursor `session_sequence`); stays open until aborted. */
export function streamSessionEvents(client: AgentApiClient, sessionId: string, opts: StreamOptions = {}): AsyncGenerator<AgentEvent> {
  return streamEvents(client, `/v1/sessions/${encodeURIComponent(sessionId)}/events`, { stopAfterFinished: false, ...opts });
}

/** Permanent failures (4xx other than 429, and cursor_expired) are thrown, never retried. */
function isRetryable(err: unknown): boolean {
  if (err instanceof ApiError) return err.retryable || err.status === 0 || err.status === 429 || err.status >= 500;
  return true;
}

/** The generic reader behind both helpers. */
export async function* streamEvents(client: AgentApiClient, path: string, opts: StreamOptions = {}): AsyncGenerator<AgentEvent> {
  const initialDelay = opts.initialDelayMs ?? 250;
  const maxDelay = opts.maxDelayMs ?? 5000;
  const maxAttempts = opts.maxAttempts ?? 8;
  let lastId: string | null = opts.lastEventId === undefined || opts.lastEventId === null ? null : String(opts.lastEventId);
  let failures = 0;
  let serverRetryMs: number | null = null;

  while (!opts.signal?.aborted) {
    let reason = 'stream ended';
    let received = 0;
    const headers: Record<string, string> = { ...client.authHeaders(), accept: 'text/event-stream', 'cache-control': 'no-cache' };
    if (lastId !== null) headers['last-event-id'] = lastId;
    let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
    try {
      const res = await client.fetcher(client.url(path), { headers, signal: opts.signal });
      if (!res.ok) throw await ApiError.fromResponse(res);
      if (!res.body) throw new ApiError(res.status, 'invalid_stream', 'response has no body', 'server_error', true, res.headers.get('x-request-id'));
      reader = res.body.getReader();
      const pending: EventSourceMessage[] = [];
      const parser = createParser({
        onEvent: (m) => pending.push(m),
        onRetry: (ms) => (serverRetryMs = ms),
        onComment: opts.onComment,
      });
      const decoder = new TextDecoder();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        parser.feed(decoder.decode(value, { stream: true }));
        while (pending.length) {
          const m = pending.shift()!;
          if (!m.data) continue;
          const event = JSON.parse(m.data) as AgentEvent;
          // De-duplicate at the seam (the server should never repeat, but a proxy might).
          if (m.id !== undefined && lastId !== null && /^\d+$/.test(m.id) && /^\d+$/.test(lastId) && Number(m.id) <= Number(lastId)) continue;
          if (m.id !== undefined) lastId = m.id;
          failures = 0;
          received++;
          yield event;
          if (event.type === 'run.finished' && opts.stopAfterFinished !== false) return;
        }
      }
    } catch (err) {
      if (opts.signal?.aborted) return;
      if (!isRetryable(err)) throw err;
      reason = err instanceof Error ? err.message : String(err);
      failures++;
      if (failures >= maxAttempts) throw err instanceof ApiError ? err : ApiError.network(err);
    } finally {
      if (reader) await reader.cancel().catch(() => undefined);
    }
    if (opts.signal?.aborted) return;
    if (reason === 'stream ended' && received === 0 && ++failures >= maxAttempts) {
      throw new ApiError(0, 'stream_ended', 'the event stream kept closing without events', 'network', true, null);
    }
    // A clean end without run.finished (server restart, proxy timeout) also resumes.
    const attempt = Math.max(1, failures);
    const backoff = Math.min(maxDelay, initialDelay * 2 ** (attempt - 1));
    const delayMs = Math.round(Math.min(maxDelay, Math.max(backoff, failures > 2 ? (serverRetryMs ?? 0) : 0)) * (0.8 + Math.random() * 0.4));
    opts.onReconnect?.({ attempt, lastEventId: lastId, delayMs, reason });
    await sleep(delayMs, opts.signal);
  }
}
