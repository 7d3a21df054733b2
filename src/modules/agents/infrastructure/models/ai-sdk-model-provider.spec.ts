import { FakeProviders, fakeModelEntry, Flavour, FLAVOURS, startFakeProviders } from '../../../../../test/helpers/fake-model-providers';
import { ModelError, ModelRequest, ModelStreamEvent } from '../../domain/model-provider';
import { parseModelEntries } from './model-registry';
import { AiSdkModelProvider } from './ai-sdk-model-provider';

/**
 * Wire-level: each AI SDK provider against a fake server speaking its provider's streaming format
 * (test/helpers/fake-model-providers.ts), no internet.
 */
let fake: FakeProviders;
beforeAll(async () => {
  fake = await startFakeProviders();
});
afterAll(() => fake.close());

function providerFor(f: Flavour, retries = 1): AiSdkModelProvider {
  const { entries, problems } = parseModelEntries([fakeModelEntry(f, fake)], { FAKE_MODEL_KEY: 'sk-fake' });
  expect(problems).toEqual([]);
  return new AiSdkModelProvider(entries[0], { maxRetries: retries, baseDelayMs: 10 });
}

function request(text: string, signal = new AbortController().signal): ModelRequest {
  return {
    model: 'x',
    runId: 'run_1',
    callIndex: 0,
    instructions: 'Be brief.',
    messages: [{ role: 'user', content: [{ type: 'text', text }] }],
    tools: [
      { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { location: { type: 'string' } } } },
      { name: 'get_time', description: 'Time', parameters: { type: 'object', properties: { zone: { type: 'string' } } } },
    ],
    attachments: [],
    signal,
    deadline: Date.now() + 30_000,
  };
}

async function collect(p: AiSdkModelProvider, r: ModelRequest): Promise<ModelStreamEvent[]> {
  const out: ModelStreamEvent[] = [];
  for await (const e of p.stream(r)) out.push(e);
  return out;
}

async function failure(p: AiSdkModelProvider, r: ModelRequest): Promise<ModelError> {
  try {
    await collect(p, r);
  } catch (err) {
    expect(err).toBeInstanceOf(ModelError);
    return err as ModelError;
  }
  throw new Error('the call did not fail');
}

const requestsOf = (f: Flavour, scenario: string) =>
  fake.received.filter((r) => r.flavour === f && new RegExp(`scenario:${scenario}(?![a-z0-9_-])`).test(JSON.stringify(r.body))).length;

/** Providers that report reasoning tokens in these fixtures (Anthropic and Bedrock streams carry none). */
const reasons = (f: Flavour) => f !== 'anthropic' && f !== 'bedrock';

describe.each(FLAVOURS)('AiSdkModelProvider over the %s wire format', (f) => {
  it('streams a text answer with its usage (cached and reasoning tokens)', async () => {
    const events = await collect(providerFor(f), request('scenario:text'));
    const text = events.flatMap((e) => (e.type === 'text_delta' ? [e.text] : [])).join('');
    expect(text).toBe('Hello there');
    expect(events.filter((e) => e.type === 'text_delta').length).toBeGreaterThanOrEqual(2);
    expect(events.at(-1)).toEqual({ type: 'usage', input_tokens: 11, output_tokens: 3, cached_input_tokens: 3, reasoning_tokens: reasons(f) ? 1 : 0 });
  });

  it('assembles a streamed tool call', async () => {
    const events = await collect(providerFor(f), request('scenario:tool'));
    const calls = events.filter((e) => e.type === 'tool_call');
    expect(calls).toEqual([expect.objectContaining({ type: 'tool_call', name: 'get_weather', arguments: { location: 'Paris' } })]);
    if (f !== 'google') expect(calls[0]).toMatchObject({ id: 'call_w1' }); // Gemini has no call ids: the SDK makes one
    expect(events.at(-1)).toMatchObject({ type: 'usage', input_tokens: 1200, output_tokens: 30, cached_input_tokens: 200 });
  });

  it('gives two parallel tool calls in order', async () => {
    const events = await collect(providerFor(f), request('scenario:parallel'));
    expect(events.filter((e) => e.type === 'tool_call').map((e) => e.type === 'tool_call' && [e.name, e.arguments])).toEqual([
      ['get_weather', { location: 'Paris' }],
      ['get_time', { zone: 'Europe/Paris' }],
    ]);
  });

  it('sends the instructions, the tools and the key', async () => {
    await collect(providerFor(f), request('scenario:text'));
    const last = fake.received.filter((r) => r.flavour === f).at(-1)!;
    const body = JSON.stringify(last.body);
    expect(body).toContain('Be brief.');
    expect(body).toContain('get_weather');
    const auth = `${last.headers.authorization ?? ''}${last.headers['x-api-key'] ?? ''}${last.headers['x-goog-api-key'] ?? ''}`;
    expect(auth).toContain('sk-fake');
  });

  it('sends an image attachment as the provider takes images', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex').toString('base64');
    const r = request('scenario:text');
    r.messages = [{ role: 'user', content: [{ type: 'text', text: 'scenario:text what is this?' }, { type: 'attachment_ref', attachment_id: 'att_1' }] }];
    r.attachments = [{ attachment_id: 'att_1', filename: 'dot.png', media_type: 'image/png', size_bytes: 29, image_base64: png }];
    await collect(providerFor(f), r);
    const body = JSON.stringify(fake.received.filter((x) => x.flavour === f).at(-1)!.body);
    expect(body).toContain('[attachment att_1: dot.png (image/png, 29 bytes)]');
    expect(body).toContain(png);
  });

  it('retries a 429 honouring retry-after, then answers', async () => {
    const started = Date.now();
    const events = await collect(providerFor(f), request('scenario:429-once'));
    expect(Date.now() - started).toBeGreaterThanOrEqual(950); // retry-after: 1 (not the 10 ms backoff)
    expect(events.flatMap((e) => (e.type === 'text_delta' ? [e.text] : [])).join('')).toBe('Hello there');
    expect(requestsOf(f, '429-once')).toBe(2);
  });

  it('a 429 that persists ends as model_rate_limited after the retries', async () => {
    const err = await failure(providerFor(f, 2), request('scenario:429'));
    expect(err.code).toBe('model_rate_limited');
    expect(requestsOf(f, '429')).toBe(3);
  });

  it('a 500 is model_error (retried)', async () => {
    const err = await failure(providerFor(f, 1), request('scenario:500'));
    expect(err.code).toBe('model_error');
    expect(err.retryable).toBe(true);
    expect(requestsOf(f, '500')).toBe(2);
  });

  it('a context-length error is context_length_exceeded, not retried', async () => {
    const err = await failure(providerFor(f, 2), request('scenario:context'));
    expect(err.code).toBe('context_length_exceeded');
    expect(err.retryable).toBe(false);
    expect(requestsOf(f, 'context')).toBe(1);
  });

  it('a bad key is model_auth_failed', async () => {
    const err = await failure(providerFor(f, 2), request('scenario:auth'));
    expect(err.code).toBe('model_auth_failed');
    expect(requestsOf(f, 'auth')).toBe(1);
  });

  it('a stream cut mid-way is model_error (not retried after output)', async () => {
    const err = await failure(providerFor(f, 2), request('scenario:cut'));
    expect(err.code).toBe('model_error');
  });

  // The 100 ms of the issue is asserted end to end (test/e2e/models-and-money); here, with six fake
  // servers and the SDK in one Jest process on a shared machine, the bound is looser (25-108 ms seen at load 17).
  it('a cancel mid-stream closes the upstream connection promptly', async () => {
    // Once unmeasured: the first abort of a process compiles its paths (seen at 500 ms on a loaded machine).
    const warm = new AbortController();
    const w = providerFor(f).stream(request('scenario:hang', warm.signal))[Symbol.asyncIterator]();
    await w.next();
    warm.abort(new Error('cancelled'));
    await w.next().catch(() => undefined);
    const ac = new AbortController();
    const before = fake.received.length;
    const it = providerFor(f).stream(request('scenario:hang', ac.signal))[Symbol.asyncIterator]();
    const first = await it.next();
    expect(first.done).toBe(false);
    const index = fake.received.length - 1;
    expect(index).toBe(before);
    const abortedAt = Date.now();
    ac.abort(new Error('cancelled'));
    // Events already received may still be given; then the stream fails (it never ends as if complete).
    const drain = async () => {
      for (;;) if ((await it.next()).done) return 'ended';
    };
    await expect(drain()).rejects.toMatchObject({ code: 'model_timeout' });
    for (let i = 0; i < 50 && !fake.closedAt.has(index); i++) await new Promise((r) => setTimeout(r, 5));
    expect(fake.closedAt.get(index)! - abortedAt).toBeLessThanOrEqual(250);
  });
});
