import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';

/**
 * Fake model providers on 127.0.0.1, each speaking its provider's documented streaming wire
 * format byte for byte (fixtures written from the providers' API references):
 *   POST /openai/v1/chat/completions           OpenAI Chat Completions SSE (`data: {...}` ... `data: [DONE]`)
 *   POST /openai/v1/responses                  OpenAI Responses SSE (`event: response.*`)
 *   POST /anthropic/v1/messages                Anthropic Messages SSE (message_start, content_block_*, message_delta, message_stop)
 *   POST /google/v1beta/models/M:streamGenerateContent?alt=sse   Gemini SSE (`data: {candidates, usageMetadata}`)
 *   POST /bedrock/model/M/converse-stream      Bedrock ConverseStream (AWS event-stream binary frames, encoded by @smithy/eventstream-codec)
 *   POST /compat/v1/chat/completions           an OpenAI-compatible server as vLLM / Ollama answer (whole tool calls in one chunk, usage in the last)
 *
 * The scenario comes from the newest user text (`scenario:NAME`); without one the server plays
 * an agent: a tool call (`get_weather`) first, then, once the request holds the tool's result, a
 * text answer. Usage figures are fixed per turn so tests can compute costs by hand.
 */
export type Flavour = 'openai' | 'responses' | 'anthropic' | 'google' | 'bedrock' | 'compat';
export const FLAVOURS: Flavour[] = ['openai', 'responses', 'anthropic', 'google', 'bedrock', 'compat'];

export interface TurnUsage {
  input: number;
  output: number;
  cached: number;
  reasoning: number;
}
export interface FakeTurn {
  text?: string[];
  calls?: Array<{ id: string; name: string; args: Record<string, unknown> }>;
  usage: TurnUsage;
}

/** The agent flow's two turns (what e2e tests compute costs from). */
export const TOOL_TURN: FakeTurn = { calls: [{ id: 'call_w1', name: 'get_weather', args: { location: 'Paris' } }], usage: { input: 1200, output: 30, cached: 200, reasoning: 10 } };
export const ANSWER_TURN: FakeTurn = { text: ['It is ', 'sunny in ', 'Paris.'], usage: { input: 1300, output: 20, cached: 0, reasoning: 0 } };
export const TEXT_TURN: FakeTurn = { text: ['Hel', 'lo ', 'there'], usage: { input: 11, output: 3, cached: 3, reasoning: 1 } };
export const PARALLEL_TURN: FakeTurn = {
  calls: [
    { id: 'call_p1', name: 'get_weather', args: { location: 'Paris' } },
    { id: 'call_p2', name: 'get_time', args: { zone: 'Europe/Paris' } },
  ],
  usage: { input: 50, output: 20, cached: 0, reasoning: 0 },
};

export interface Received {
  flavour: Flavour;
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
}

const MODEL = 'fake-model';

function sseData(res: ServerResponse, obj: unknown): void {
  res.write(`data: ${typeof obj === 'string' ? obj : JSON.stringify(obj)}\n\n`);
}
function sseEvent(res: ServerResponse, type: string, obj: unknown): void {
  res.write(`event: ${type}\ndata: ${JSON.stringify(obj)}\n\n`);
}

// ---- OpenAI Chat Completions (and the compatible servers) -------------------------------------

function chatChunk(delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) {
  return { id: 'chatcmpl-fake1', object: 'chat.completion.chunk', created: 1733000000, model: MODEL, ...extra, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] };
}
function chatUsage(u: TurnUsage, extra: Record<string, unknown> = {}) {
  return {
    id: 'chatcmpl-fake1',
    object: 'chat.completion.chunk',
    created: 1733000000,
    model: MODEL,
    ...extra,
    choices: [],
    usage: {
      prompt_tokens: u.input,
      completion_tokens: u.output,
      total_tokens: u.input + u.output,
      prompt_tokens_details: { cached_tokens: u.cached },
      completion_tokens_details: { reasoning_tokens: u.reasoning },
    },
  };
}
function* openAiChunks(turn: FakeTurn, ollama: boolean): Generator<(res: ServerResponse) => void> {
  const extra = ollama ? { system_fingerprint: 'fp_ollama' } : { system_fingerprint: 'fp_fake' };
  yield (res) => sseData(res, chatChunk({ role: 'assistant', content: '' }, null, extra));
  for (const t of turn.text ?? []) yield (res) => sseData(res, chatChunk({ content: t }, null, extra));
  const calls = turn.calls ?? [];
  if (ollama) {
    // Ollama and vLLM without streamed tool parsing send each call whole.
    if (calls.length)
      yield (res) =>
        sseData(res, chatChunk({ tool_calls: calls.map((c, i) => ({ index: i, id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.args) } })) }, null, extra));
  }
  if (!ollama) {
    for (const [i, c] of calls.entries()) {
      const args = JSON.stringify(c.args);
      const cut = Math.floor(args.length / 2);
      yield (res) => sseData(res, chatChunk({ tool_calls: [{ index: i, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] }, null, extra));
      yield (res) => sseData(res, chatChunk({ tool_calls: [{ index: i, function: { arguments: args.slice(0, cut) } }] }, null, extra));
      yield (res) => sseData(res, chatChunk({ tool_calls: [{ index: i, function: { arguments: args.slice(cut) } }] }, null, extra));
    }
  }
  yield (res) => sseData(res, chatChunk({}, calls.length ? 'tool_calls' : 'stop', extra));
  yield (res) => sseData(res, chatUsage(turn.usage, extra));
  yield (res) => sseData(res, '[DONE]');
}

// ---- OpenAI Responses -------------------------------------------------------------------------

function* responsesChunks(turn: FakeTurn): Generator<(res: ServerResponse) => void> {
  let seq = 0;
  const ev = (type: string, body: Record<string, unknown>) => (res: ServerResponse) => sseEvent(res, type, { type, sequence_number: seq++, ...body });
  const base = { id: 'resp_fake1', object: 'response', created_at: 1733000000, model: MODEL, output: [], tools: [], parallel_tool_calls: true, error: null, incomplete_details: null };
  yield ev('response.created', { response: { ...base, status: 'in_progress', usage: null } });
  yield ev('response.in_progress', { response: { ...base, status: 'in_progress', usage: null } });
  let index = 0;
  const output: unknown[] = [];
  if (turn.text?.length) {
    const id = 'msg_fake1';
    const full = turn.text.join('');
    yield ev('response.output_item.added', { output_index: index, item: { id, type: 'message', status: 'in_progress', role: 'assistant', content: [] } });
    yield ev('response.content_part.added', { item_id: id, output_index: index, content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } });
    for (const t of turn.text) yield ev('response.output_text.delta', { item_id: id, output_index: index, content_index: 0, delta: t, logprobs: [] });
    yield ev('response.output_text.done', { item_id: id, output_index: index, content_index: 0, text: full, logprobs: [] });
    yield ev('response.content_part.done', { item_id: id, output_index: index, content_index: 0, part: { type: 'output_text', text: full, annotations: [], logprobs: [] } });
    const item = { id, type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: full, annotations: [], logprobs: [] }] };
    output.push(item);
    yield ev('response.output_item.done', { output_index: index, item });
    index++;
  }
  for (const c of turn.calls ?? []) {
    const id = `fc_${c.id}`;
    const args = JSON.stringify(c.args);
    const cut = Math.floor(args.length / 2);
    yield ev('response.output_item.added', { output_index: index, item: { id, type: 'function_call', status: 'in_progress', arguments: '', call_id: c.id, name: c.name } });
    yield ev('response.function_call_arguments.delta', { item_id: id, output_index: index, delta: args.slice(0, cut) });
    yield ev('response.function_call_arguments.delta', { item_id: id, output_index: index, delta: args.slice(cut) });
    yield ev('response.function_call_arguments.done', { item_id: id, output_index: index, arguments: args });
    const item = { id, type: 'function_call', status: 'completed', arguments: args, call_id: c.id, name: c.name };
    output.push(item);
    yield ev('response.output_item.done', { output_index: index, item });
    index++;
  }
  const u = turn.usage;
  yield ev('response.completed', {
    response: {
      ...base,
      status: 'completed',
      output,
      usage: {
        input_tokens: u.input,
        input_tokens_details: { cached_tokens: u.cached },
        output_tokens: u.output,
        output_tokens_details: { reasoning_tokens: u.reasoning },
        total_tokens: u.input + u.output,
      },
    },
  });
}

// ---- Anthropic Messages -----------------------------------------------------------------------

/** Anthropic counts cache reads apart from `input_tokens`: the fixture's input is split so the totals match the other providers'. */
function* anthropicChunks(turn: FakeTurn): Generator<(res: ServerResponse) => void> {
  const u = turn.usage;
  yield (res) =>
    sseEvent(res, 'message_start', {
      type: 'message_start',
      message: {
        id: 'msg_fake1',
        type: 'message',
        role: 'assistant',
        content: [],
        model: MODEL,
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: u.input - u.cached, cache_creation_input_tokens: 0, cache_read_input_tokens: u.cached, output_tokens: 1 },
      },
    });
  let index = 0;
  if (turn.text?.length) {
    const i = index++;
    yield (res) => sseEvent(res, 'content_block_start', { type: 'content_block_start', index: i, content_block: { type: 'text', text: '' } });
    yield (res) => sseEvent(res, 'ping', { type: 'ping' });
    for (const t of turn.text) yield (res) => sseEvent(res, 'content_block_delta', { type: 'content_block_delta', index: i, delta: { type: 'text_delta', text: t } });
    yield (res) => sseEvent(res, 'content_block_stop', { type: 'content_block_stop', index: i });
  }
  for (const c of turn.calls ?? []) {
    const i = index++;
    const args = JSON.stringify(c.args);
    const cut = Math.floor(args.length / 2);
    yield (res) => sseEvent(res, 'content_block_start', { type: 'content_block_start', index: i, content_block: { type: 'tool_use', id: c.id, name: c.name, input: {} } });
    yield (res) => sseEvent(res, 'content_block_delta', { type: 'content_block_delta', index: i, delta: { type: 'input_json_delta', partial_json: '' } });
    yield (res) => sseEvent(res, 'content_block_delta', { type: 'content_block_delta', index: i, delta: { type: 'input_json_delta', partial_json: args.slice(0, cut) } });
    yield (res) => sseEvent(res, 'content_block_delta', { type: 'content_block_delta', index: i, delta: { type: 'input_json_delta', partial_json: args.slice(cut) } });
    yield (res) => sseEvent(res, 'content_block_stop', { type: 'content_block_stop', index: i });
  }
  yield (res) =>
    sseEvent(res, 'message_delta', { type: 'message_delta', delta: { stop_reason: turn.calls?.length ? 'tool_use' : 'end_turn', stop_sequence: null }, usage: { output_tokens: u.output } });
  yield (res) => sseEvent(res, 'message_stop', { type: 'message_stop' });
}

// ---- Gemini -----------------------------------------------------------------------------------

function* googleChunks(turn: FakeTurn): Generator<(res: ServerResponse) => void> {
  const u = turn.usage;
  const usage = (final: boolean) => ({
    promptTokenCount: u.input,
    candidatesTokenCount: final ? u.output - u.reasoning : 1,
    totalTokenCount: u.input + (final ? u.output : 1),
    ...(u.cached ? { cachedContentTokenCount: u.cached } : {}),
    ...(final && u.reasoning ? { thoughtsTokenCount: u.reasoning } : {}),
  });
  const text = turn.text ?? [];
  const calls = turn.calls ?? [];
  for (const [i, t] of text.entries()) {
    const last = i === text.length - 1 && calls.length === 0;
    yield (res) =>
      sseData(res, {
        candidates: [{ content: { parts: [{ text: t }], role: 'model' }, ...(last ? { finishReason: 'STOP' } : {}), index: 0 }],
        usageMetadata: usage(last),
        modelVersion: MODEL,
      });
  }
  if (calls.length) {
    yield (res) =>
      sseData(res, {
        candidates: [{ content: { parts: calls.map((c) => ({ functionCall: { name: c.name, args: c.args } })), role: 'model' }, finishReason: 'STOP', index: 0 }],
        usageMetadata: usage(true),
        modelVersion: MODEL,
      });
  }
}

// ---- Bedrock ConverseStream (AWS event stream) --------------------------------------------------

const codec = new EventStreamCodec(toUtf8, fromUtf8);
function bedrockFrame(eventType: string, payload: Record<string, unknown>): Uint8Array {
  return codec.encode({
    headers: {
      ':event-type': { type: 'string', value: eventType },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'event' },
    },
    // `p` pads every event to hide its length (AWS does this; the SDK drops it).
    body: fromUtf8(JSON.stringify({ ...payload, p: 'abcdefghij' })),
  });
}
function* bedrockChunks(turn: FakeTurn): Generator<(res: ServerResponse) => void> {
  const u = turn.usage;
  const w = (t: string, p: Record<string, unknown>) => (res: ServerResponse) => res.write(bedrockFrame(t, p));
  yield w('messageStart', { role: 'assistant' });
  let index = 0;
  if (turn.text?.length) {
    const i = index++;
    for (const t of turn.text) yield w('contentBlockDelta', { contentBlockIndex: i, delta: { text: t } });
    yield w('contentBlockStop', { contentBlockIndex: i });
  }
  for (const c of turn.calls ?? []) {
    const i = index++;
    const args = JSON.stringify(c.args);
    const cut = Math.floor(args.length / 2);
    yield w('contentBlockStart', { contentBlockIndex: i, start: { toolUse: { toolUseId: c.id, name: c.name } } });
    yield w('contentBlockDelta', { contentBlockIndex: i, delta: { toolUse: { input: args.slice(0, cut) } } });
    yield w('contentBlockDelta', { contentBlockIndex: i, delta: { toolUse: { input: args.slice(cut) } } });
    yield w('contentBlockStop', { contentBlockIndex: i });
  }
  yield w('messageStop', { stopReason: turn.calls?.length ? 'tool_use' : 'end_turn' });
  yield w('metadata', {
    usage: { inputTokens: u.input - u.cached, outputTokens: u.output, totalTokens: u.input + u.output, cacheReadInputTokens: u.cached, cacheWriteInputTokens: 0 },
    metrics: { latencyMs: 12 },
  });
}

// ---- errors as each provider words them -------------------------------------------------------

type ErrorKind = '429' | '500' | 'context' | 'auth';
function errorOf(flavour: Flavour, kind: ErrorKind): { status: number; headers: Record<string, string>; body: unknown } {
  const status = kind === '429' ? 429 : kind === '500' ? 500 : kind === 'auth' ? 401 : 400;
  switch (flavour) {
    case 'anthropic': {
      const [type, message] =
        kind === '429'
          ? ['rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit']
          : kind === '500'
            ? ['api_error', 'Internal server error']
            : kind === 'auth'
              ? ['authentication_error', 'invalid x-api-key']
              : ['invalid_request_error', 'prompt is too long: 210000 tokens > 200000 maximum'];
      return { status, headers: {}, body: { type: 'error', error: { type, message } } };
    }
    case 'google': {
      const [st, message] =
        kind === '429'
          ? ['RESOURCE_EXHAUSTED', 'Resource has been exhausted (e.g. check quota).']
          : kind === '500'
            ? ['INTERNAL', 'An internal error has occurred.']
            : kind === 'auth'
              ? ['UNAUTHENTICATED', 'API key not valid. Please pass a valid API key.']
              : ['INVALID_ARGUMENT', 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).'];
      return { status, headers: {}, body: { error: { code: status, message, status: st } } };
    }
    case 'bedrock': {
      const [type, message] =
        kind === '429'
          ? ['ThrottlingException', 'Too many requests, please wait before trying again.']
          : kind === '500'
            ? ['InternalServerException', 'The server encountered an internal error.']
            : kind === 'auth'
              ? ['UnrecognizedClientException', 'The security token included in the request is invalid.']
              : ['ValidationException', 'Input is too long for requested model.'];
      return { status: kind === 'auth' ? 403 : status, headers: { 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/` }, body: { message } };
    }
    default: {
      const [type, code, message] =
        kind === '429'
          ? ['requests', 'rate_limit_exceeded', 'Rate limit reached for requests']
          : kind === '500'
            ? ['server_error', null, 'The server had an error while processing your request.']
            : kind === 'auth'
              ? ['invalid_request_error', 'invalid_api_key', 'Incorrect API key provided.']
              : [
                  'invalid_request_error',
                  'context_length_exceeded',
                  "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.",
                ];
      return { status, headers: {}, body: { error: { message, type, param: kind === 'context' ? 'messages' : null, code } } };
    }
  }
}

// ---- the server -------------------------------------------------------------------------------

function flavourOf(path: string): Flavour | null {
  if (path === '/openai/v1/chat/completions') return 'openai';
  if (path === '/openai/v1/responses') return 'responses';
  if (path === '/anthropic/v1/messages') return 'anthropic';
  if (/^\/google\/v1beta\/models\/[^/]+:streamGenerateContent$/.test(path)) return 'google';
  if (/^\/bedrock\/model\/[^/]+\/converse-stream$/.test(path)) return 'bedrock';
  if (path === '/compat/v1/chat/completions') return 'compat';
  return null;
}

function chunksOf(flavour: Flavour, turn: FakeTurn): Array<(res: ServerResponse) => void> {
  switch (flavour) {
    case 'openai':
      return [...openAiChunks(turn, false)];
    case 'compat':
      return [...openAiChunks(turn, true)];
    case 'responses':
      return [...responsesChunks(turn)];
    case 'anthropic':
      return [...anthropicChunks(turn)];
    case 'google':
      return [...googleChunks(turn)];
    case 'bedrock':
      return [...bedrockChunks(turn)];
  }
}

function contentType(flavour: Flavour): string {
  return flavour === 'bedrock' ? 'application/vnd.amazon.eventstream' : 'text/event-stream';
}

/** Every text the request carries (all providers' shapes), to find the scenario and whether a tool result is there. */
function requestText(body: unknown): string {
  return JSON.stringify(body ?? null);
}

function scenarioOf(body: unknown): string {
  const all = [...requestText(body).matchAll(/scenario:([a-z0-9_-]+)/g)];
  return all.length ? all[all.length - 1][1] : 'agent';
}

/** Whether the request carries a tool result (the agent flow's second turn), in any provider's shape. */
function hasToolResult(flavour: Flavour, body: any): boolean {
  const s = requestText(body);
  switch (flavour) {
    case 'openai':
    case 'compat':
      return s.includes('"role":"tool"');
    case 'responses':
      return s.includes('"type":"function_call_output"');
    case 'anthropic':
      return s.includes('"type":"tool_result"');
    case 'google':
      return s.includes('"functionResponse"');
    case 'bedrock':
      return s.includes('"toolResult"');
  }
}

export interface FakeProviders {
  url: string;
  received: Received[];
  /** When the server saw each hung stream's connection close (ms since epoch), by request index. */
  closedAt: Map<number, number>;
  /** When each hung stream had sent its first chunk. */
  hungAt: Map<number, number>;
  /** 429 answers given (per flavour) by the `429-once` scenario. */
  baseUrl(flavour: Flavour): string;
  /**
   * The `echo` scenario's turns: a call of `tool` (no arguments) first, then, once the request holds
   * its result, `answer` as the streamed text chunks (a model that repeats what it was told).
   */
  echo: { tool: string; answer: string[] };
  close(): Promise<void>;
}

export async function startFakeProviders(): Promise<FakeProviders> {
  const received: Received[] = [];
  const closedAt = new Map<number, number>();
  const hungAt = new Map<number, number>();
  const rateLimited = new Set<string>();
  const sockets = new Set<import('node:net').Socket>();
  const echo = { tool: 'get_weather', answer: ['It is ', 'sunny.'] };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const flavour = req.method === 'POST' ? flavourOf(url.pathname) : null;
      if (!flavour) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
        return;
      }
      let body: any = null;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        body = null;
      }
      const index = received.push({ flavour, path: `${url.pathname}${url.search}`, headers: req.headers, body }) - 1;
      const scenario = scenarioOf(body);
      const fail = (kind: ErrorKind, extraHeaders: Record<string, string> = {}) => {
        const e = errorOf(flavour, kind);
        res.writeHead(e.status, { 'content-type': 'application/json', ...e.headers, ...extraHeaders }).end(JSON.stringify(e.body));
      };
      const stream = (turn: FakeTurn, mode: 'all' | 'cut' | 'hang' = 'all') => {
        const parts = chunksOf(flavour, turn);
        res.writeHead(200, { 'content-type': contentType(flavour), 'cache-control': 'no-cache', connection: 'keep-alive' });
        if (mode === 'all') {
          for (const p of parts) p(res);
          res.end();
          return;
        }
        // The first half of the stream, then the socket is destroyed (cut) or held open (hang).
        for (const p of parts.slice(0, Math.max(2, Math.floor(parts.length / 2)))) p(res);
        if (mode === 'cut') {
          setTimeout(() => res.socket?.destroy(), 20);
          return;
        }
        hungAt.set(index, Date.now());
        res.on('close', () => closedAt.set(index, Date.now()));
      };
      switch (scenario) {
        case 'text':
          return stream(TEXT_TURN);
        case 'tool':
          return stream(TOOL_TURN);
        case 'parallel':
          return stream(PARALLEL_TURN);
        case '429':
          return fail('429', { 'retry-after': '0' });
        case '429-once': {
          const key = `${flavour}:${scenario}`;
          if (rateLimited.has(key)) return stream(TEXT_TURN);
          rateLimited.add(key);
          return fail('429', { 'retry-after': '1' });
        }
        case '500':
          return fail('500');
        case 'context':
          return fail('context');
        case 'auth':
          return fail('auth');
        case 'echo':
          return stream(
            hasToolResult(flavour, body)
              ? { text: echo.answer, usage: ANSWER_TURN.usage }
              : { calls: [{ id: `call_echo_${index}`, name: echo.tool, args: {} }], usage: TOOL_TURN.usage },
          );
        case 'cut':
          return stream(ANSWER_TURN, 'cut');
        case 'hang':
          return stream(ANSWER_TURN, 'hang');
        default:
          return stream(hasToolResult(flavour, body) ? ANSWER_TURN : TOOL_TURN);
      }
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    received,
    closedAt,
    hungAt,
    echo,
    baseUrl: (f) =>
      f === 'openai' || f === 'responses' ? `${url}/openai/v1` : f === 'anthropic' ? `${url}/anthropic/v1` : f === 'google' ? `${url}/google/v1beta` : f === 'bedrock' ? `${url}/bedrock` : `${url}/compat/v1`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** The registry entry (MODELS_FILE form) of a fake provider. */
export function fakeModelEntry(f: Flavour, fake: FakeProviders, price = { input_per_mtok: 3, output_per_mtok: 15, cached_input_per_mtok: 0.3 }): Record<string, unknown> {
  const provider = { openai: 'openai', responses: 'openai_responses', anthropic: 'anthropic', google: 'google', bedrock: 'bedrock', compat: 'openai_compatible' }[f];
  return { id: `fake-${f}`, provider, model: MODEL, base_url: fake.baseUrl(f), api_key: '${env:FAKE_MODEL_KEY}', price };
}
