import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { loadConfig } from '../../../../common/config/app-config';
import { ModelMessage, ModelRequest, ModelStreamEvent } from '../../domain/model-provider';
import { OpenAiModelProvider, toOpenAiMessages } from './openai-model-provider';

/** A fake OpenAI-compatible server: the newest user text picks the behaviour. */
interface Received {
  headers: IncomingMessage['headers'];
  body: any;
}

const sse = (res: ServerResponse, obj: unknown) => res.write(`data: ${typeof obj === 'string' ? obj : JSON.stringify(obj)}\n\n`);
const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  choices: [{ index: 0, delta, finish_reason: finish }],
});

function behave(scenario: string, res: ServerResponse): void {
  const start = () => res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  switch (scenario) {
    case 'text':
      start();
      sse(res, chunk({ role: 'assistant', content: '' }));
      sse(res, chunk({ content: 'Hel' }));
      // one event split across two writes, with CRLF line ends
      res.write('data: {"choices":[{"index":0,"delta":{"content":"lo');
      res.write(' there"},"finish_reason":null}]}\r\n\r\n');
      sse(res, chunk({}, 'stop'));
      sse(res, { choices: [], usage: { prompt_tokens: 11, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 3 } } });
      sse(res, '[DONE]');
      res.end();
      return;
    case 'tools':
      start();
      sse(res, chunk({ role: 'assistant', tool_calls: [{ index: 0, id: 'call_abc', type: 'function', function: { name: 'get_weather', arguments: '' } }] }));
      sse(res, chunk({ tool_calls: [{ index: 0, function: { arguments: '{"loc' } }] }));
      sse(res, chunk({ tool_calls: [{ index: 1, id: 'call_def', type: 'function', function: { name: 'get_time', arguments: '{}' } }] }));
      sse(res, chunk({ tool_calls: [{ index: 0, function: { arguments: 'ation": "Paris"}' } }] }));
      sse(res, chunk({}, 'tool_calls'));
      sse(res, { choices: [], usage: { prompt_tokens: 50, completion_tokens: 20 } });
      sse(res, '[DONE]');
      res.end();
      return;
    case 'no-usage':
      start();
      sse(res, chunk({ content: 'abcdefgh' }));
      sse(res, chunk({}, 'stop'));
      sse(res, '[DONE]');
      res.end();
      return;
    case 'bad-args':
      start();
      sse(res, chunk({ tool_calls: [{ index: 0, id: 'call_x', function: { name: 'get_weather', arguments: '{"location": ' } }] }));
      sse(res, chunk({}, 'tool_calls'));
      sse(res, '[DONE]');
      res.end();
      return;
    case 'filter':
      start();
      sse(res, chunk({ content: 'I' }));
      sse(res, chunk({}, 'content_filter'));
      sse(res, '[DONE]');
      res.end();
      return;
    case 'refusal':
      start();
      sse(res, chunk({ refusal: 'I cannot help with that.' }));
      sse(res, chunk({}, 'stop'));
      sse(res, '[DONE]');
      res.end();
      return;
    case 'truncated':
      start();
      sse(res, chunk({ content: 'partial' }));
      res.end();
      return;
    case 'stream-error':
      start();
      sse(res, { error: { message: 'overloaded', type: 'server_error' } });
      res.end();
      return;
    case 'hang-mid-stream':
      start();
      sse(res, chunk({ content: 'thinking' }));
      return; // never ends
    case 'hang-before-headers':
      return; // never answers
    default: {
      const status = Number(scenario);
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `fake ${status}`, type: 'x' } }));
    }
  }
}

describe('OpenAiModelProvider against a fake OpenAI-compatible server', () => {
  let server: Server;
  let baseUrl: string;
  const received: Received[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let raw = '';
      req.on('data', (d: Buffer) => (raw += d.toString('utf8')));
      req.on('end', () => {
        const body = JSON.parse(raw);
        received.push({ headers: req.headers, body });
        if (req.url !== '/v1/chat/completions') {
          res.writeHead(404).end();
          return;
        }
        const users = (body.messages as Array<{ role: string; content: unknown }>).filter((m) => m.role === 'user');
        const last = users[users.length - 1]?.content;
        behave(typeof last === 'string' ? last : (last as Array<{ text?: string }>)[0].text ?? '', res);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const provider = () => new OpenAiModelProvider(loadConfig({ OPENAI_BASE_URL: baseUrl, OPENAI_API_KEY: 'sk-test-123', OPENAI_MODEL: 'gpt-test' }));

  function req(text: string, over: Partial<ModelRequest> = {}): ModelRequest {
    return {
      model: 'gpt-test',
      runId: 'run_1',
      callIndex: 0,
      instructions: 'Be brief.',
      messages: [{ role: 'user', content: [{ type: 'text', text }] }],
      tools: [{ name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { location: { type: 'string' } } } }],
      attachments: [],
      signal: new AbortController().signal,
      deadline: Date.now() + 10_000,
      ...over,
    };
  }

  async function collect(r: ModelRequest, p = provider()): Promise<ModelStreamEvent[]> {
    const out: ModelStreamEvent[] = [];
    for await (const e of p.stream(r)) out.push(e);
    return out;
  }

  it('streams text deltas and reports the usage the server sends', async () => {
    const events = await collect(req('text'));
    expect(events).toEqual([
      { type: 'text_delta', text: 'Hel' },
      { type: 'text_delta', text: 'lo there' },
      { type: 'usage', input_tokens: 11, output_tokens: 2, cached_input_tokens: 3 },
    ]);
    const sent = received[received.length - 1];
    expect(sent.headers.authorization).toBe('Bearer sk-test-123');
    expect(sent.body).toMatchObject({
      model: 'gpt-test',
      stream: true,
      stream_options: { include_usage: true },
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'text' },
      ],
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object' } } }],
    });
  });

  it('assembles streamed tool-call fragments into whole calls, in index order', async () => {
    const events = await collect(req('tools'));
    expect(events).toEqual([
      { type: 'tool_call', id: 'call_abc', name: 'get_weather', arguments: { location: 'Paris' } },
      { type: 'tool_call', id: 'call_def', name: 'get_time', arguments: {} },
      { type: 'usage', input_tokens: 50, output_tokens: 20, cached_input_tokens: 0 },
    ]);
  });

  it('passes arguments that are not JSON on as the raw string (the registry rejects them)', async () => {
    const events = await collect(req('bad-args'));
    expect(events[0]).toEqual({ type: 'tool_call', id: 'call_x', name: 'get_weather', arguments: '{"location": ' });
  });

  it('estimates usage (1 token per 4 characters) when the server sends none', async () => {
    const events = await collect(req('no-usage'));
    expect(events[events.length - 1]).toEqual({
      type: 'usage',
      input_tokens: Math.ceil(('no-usage'.length + 'Be brief.'.length) / 4),
      output_tokens: 2,
    });
  });

  it.each<[string, boolean]>([
    ['500', true],
    ['503', true],
    ['429', true],
    ['400', false],
    ['401', false],
  ])('HTTP %s -> model_error (retryable: %s)', async (status, retryable) => {
    await expect(collect(req(status))).rejects.toMatchObject({
      name: 'ModelError',
      code: 'model_error',
      retryable,
      message: `model endpoint answered HTTP ${status}: fake ${status}`,
    });
  });

  it('an error object inside the stream -> model_error', async () => {
    await expect(collect(req('stream-error'))).rejects.toMatchObject({ code: 'model_error', message: expect.stringContaining('overloaded') });
  });

  it('a stream that ends without finish_reason or [DONE] -> model_error', async () => {
    await expect(collect(req('truncated'))).rejects.toMatchObject({ code: 'model_error', message: 'model stream ended early' });
  });

  it('finish_reason content_filter -> model_refusal', async () => {
    await expect(collect(req('filter'))).rejects.toMatchObject({ code: 'model_refusal' });
  });

  it('a refusal -> model_refusal with its text', async () => {
    await expect(collect(req('refusal'))).rejects.toMatchObject({ code: 'model_refusal', message: 'the model refused: I cannot help with that.' });
  });

  it('a server that hangs mid-stream is cut at the deadline with model_timeout', async () => {
    const started = Date.now();
    const seen: ModelStreamEvent[] = [];
    const run = (async () => {
      for await (const e of provider().stream(req('hang-mid-stream', { deadline: Date.now() + 300 }))) seen.push(e);
    })();
    await expect(run).rejects.toMatchObject({ code: 'model_timeout', message: 'the model call passed the run deadline' });
    expect(seen).toEqual([{ type: 'text_delta', text: 'thinking' }]);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('a server that never answers is cut at the deadline with model_timeout', async () => {
    const started = Date.now();
    await expect(collect(req('hang-before-headers', { deadline: Date.now() + 200 }))).rejects.toMatchObject({ code: 'model_timeout' });
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('an abort (cancel) stops a hanging call with model_timeout', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    const started = Date.now();
    await expect(collect(req('hang-mid-stream', { signal: ac.signal }))).rejects.toMatchObject({
      code: 'model_timeout',
      message: 'the model call was aborted',
    });
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('an unreachable endpoint -> retryable model_error', async () => {
    const p = new OpenAiModelProvider(loadConfig({ OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' }));
    await expect(collect(req('text'), p)).rejects.toMatchObject({ code: 'model_error', retryable: true });
  });
});

describe('toOpenAiMessages', () => {
  it('maps tool calls, tool results, attachments and images to the Chat Completions format', () => {
    const messages: ModelMessage[] = [
      { role: 'system', content: [{ type: 'text', text: 'sys note' }] },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look at these' },
          { type: 'attachment_ref', attachment_id: 'att_t' },
          { type: 'attachment_ref', attachment_id: 'att_i' },
          { type: 'attachment_ref', attachment_id: 'att_gone' },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Checking.' },
          { type: 'tool_call', tool_call_id: 'call_1', tool_name: 'get_order', arguments: { order_id: 'O-1001' } },
        ],
      },
      {
        role: 'tool',
        content: [
          { type: 'tool_result', tool_call_id: 'call_1', tool_name: 'get_order', ok: true, result: { status: 'paid' } },
          { type: 'tool_result', tool_call_id: 'call_2', tool_name: 'x', ok: false, error: { code: 'tool_failed', message: 'no' } },
        ],
      },
      { role: 'user', content: [{ type: 'text', text: 'thanks' }] },
    ];
    const out = toOpenAiMessages('You help.', messages, [
      { attachment_id: 'att_t', filename: 'notes.txt', media_type: 'text/plain', size_bytes: 5, text: 'hello' },
      { attachment_id: 'att_i', filename: 'p.png', media_type: 'image/png', size_bytes: 3, image_base64: 'AAAA' },
    ]);
    expect(out).toEqual([
      { role: 'system', content: 'You help.' },
      { role: 'system', content: 'sys note' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look at these' },
          { type: 'text', text: '[attachment att_t: notes.txt (text/plain, 5 bytes)]\nhello' },
          { type: 'text', text: '[attachment att_i: p.png (image/png, 3 bytes)]' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          { type: 'text', text: '[attachment att_gone: not available]' },
        ],
      },
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_order', arguments: '{"order_id":"O-1001"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '{"status":"paid"}' },
      { role: 'tool', tool_call_id: 'call_2', content: '{"error":{"code":"tool_failed","message":"no"}}' },
      { role: 'user', content: 'thanks' },
    ]);
  });

  it('sends text attachments inline as a plain string when there is no image', () => {
    const out = toOpenAiMessages('', [{ role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'attachment_ref', attachment_id: 'a' }] }], [
      { attachment_id: 'a', filename: 'f.csv', media_type: 'text/csv', size_bytes: 3, text: '1,2' },
    ]);
    expect(out).toEqual([{ role: 'user', content: 'see\n\n[attachment a: f.csv (text/csv, 3 bytes)]\n1,2' }]);
  });
});
