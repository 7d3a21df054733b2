import { ContentPart, ModelError, ModelMessage, ModelRequest, ModelStreamEvent, ToolSpec } from '../../domain/model-provider';
import { parseScript, ScriptedModelProvider } from './scripted-model-provider';

const ALL_TOOLS: ToolSpec[] = ['get_order', 'create_ticket', 'get_weather', 'get_time'].map((name) => ({ name, description: name, parameters: {} }));

const user = (text: string): ModelMessage => ({ role: 'user', content: [{ type: 'text', text }] });
const callMsg = (id: string, name: string, args: unknown): ModelMessage => ({
  role: 'assistant',
  content: [{ type: 'tool_call', tool_call_id: id, tool_name: name, arguments: args }],
});
const resultMsg = (id: string, name: string, outcome: { ok: true; result: unknown } | { ok: false; error: { code: string; message: string } }): ModelMessage => ({
  role: 'tool',
  content: [{ type: 'tool_result', tool_call_id: id, tool_name: name, ...outcome } as ContentPart],
});

function req(messages: ModelMessage[], over: Partial<ModelRequest> = {}): ModelRequest {
  return {
    model: 'scripted',
    runId: 'run_x',
    callIndex: 0,
    instructions: '',
    messages,
    tools: ALL_TOOLS,
    attachments: [],
    signal: new AbortController().signal,
    deadline: Date.now() + 60_000,
    ...over,
  };
}

async function collect(r: ModelRequest): Promise<ModelStreamEvent[]> {
  const out: ModelStreamEvent[] = [];
  for await (const e of new ScriptedModelProvider().stream(r)) out.push(e);
  return out;
}

const textOf = (events: ModelStreamEvent[]) =>
  events
    .filter((e): e is Extract<ModelStreamEvent, { type: 'text_delta' }> => e.type === 'text_delta')
    .map((e) => e.text)
    .join('');
const callsOf = (events: ModelStreamEvent[]) =>
  events.filter((e): e is Extract<ModelStreamEvent, { type: 'tool_call' }> => e.type === 'tool_call').map((e) => ({ name: e.name, arguments: e.arguments }));

describe('ScriptedModelProvider: !script turns', () => {
  it('streams a text turn in chunk_size pieces, then one usage event', async () => {
    const events = await collect(req([user('!script [{"text":"Hello world","chunk_size":3}]')]));
    expect(events.filter((e) => e.type === 'text_delta').map((e) => (e as { text: string }).text)).toEqual(['Hel', 'lo ', 'wor', 'ld']);
    expect(events[events.length - 1].type).toBe('usage');
    expect(events.filter((e) => e.type === 'usage')).toHaveLength(1);
  });

  it('uses chunk size 4 by default', async () => {
    const events = await collect(req([user('!script [{"text":"abcdefghij"}]')]));
    expect(events.filter((e) => e.type === 'text_delta').map((e) => (e as { text: string }).text)).toEqual(['abcd', 'efgh', 'ij']);
  });

  it('waits delay_ms between chunks', async () => {
    const started = Date.now();
    const events = await collect(req([user('!script [{"text":"abcdefgh","chunk_size":2,"delay_ms":30}]')]));
    expect(textOf(events)).toBe('abcdefgh');
    expect(Date.now() - started).toBeGreaterThanOrEqual(85); // 3 gaps of 30 ms
  });

  it('never splits a surrogate pair', async () => {
    const events = await collect(req([user('!script [{"text":"😀😀😀","chunk_size":1}]')]));
    expect(events.filter((e) => e.type === 'text_delta').map((e) => (e as { text: string }).text)).toEqual(['😀', '😀', '😀']);
  });

  it.each([
    [0, 'first'],
    [1, 'tool'],
    [2, 'third'],
    [3, 'done'],
    [7, 'done'],
  ])('callIndex %i consumes the matching turn (%s)', async (callIndex, expected) => {
    const script = '!script [{"text":"first"},{"tool_calls":[{"name":"get_time","arguments":{}}]},{"text":"third"}]';
    const events = await collect(req([user(script)], { callIndex }));
    if (expected === 'tool') {
      expect(callsOf(events)).toEqual([{ name: 'get_time', arguments: {} }]);
      expect(textOf(events)).toBe('');
    } else {
      expect(textOf(events)).toBe(expected);
      expect(callsOf(events)).toEqual([]);
    }
  });

  it('emits text before the tool calls of the same turn, each call with a call_ id', async () => {
    const events = await collect(
      req([user('!script [{"text":"Checking.","tool_calls":[{"name":"get_order","arguments":{"order_id":"O-1"}},{"name":"get_time"}]}]')]),
    );
    const kinds = events.map((e) => e.type);
    expect(kinds.indexOf('tool_call')).toBeGreaterThan(kinds.lastIndexOf('text_delta'));
    expect(callsOf(events)).toEqual([
      { name: 'get_order', arguments: { order_id: 'O-1' } },
      { name: 'get_time', arguments: {} },
    ]);
    for (const e of events) if (e.type === 'tool_call') expect(e.id).toMatch(/^call_[0-9A-Z]{26}$/);
  });

  it('passes a tool call id given by the script', async () => {
    const events = await collect(req([user('!script [{"tool_calls":[{"id":"call_fixed","name":"x","arguments":{"a":1}}]}]')]));
    expect(events.find((e) => e.type === 'tool_call')).toEqual({ type: 'tool_call', id: 'call_fixed', name: 'x', arguments: { a: 1 } });
  });

  it.each(['model_error', 'model_timeout', 'model_refusal'] as const)('an error turn fails the call with %s', async (code) => {
    const r = req([user(`!script [{"error":{"code":"${code}","message":"boom"}}]`)]);
    await expect(collect(r)).rejects.toMatchObject({ name: 'ModelError', code, message: 'boom' });
    await expect(collect(r)).rejects.toBeInstanceOf(ModelError);
  });

  it('an error turn may be retryable and has a default message', async () => {
    await expect(collect(req([user('!script [{"error":{"code":"model_error","retryable":true}}]')]))).rejects.toMatchObject({
      code: 'model_error',
      retryable: true,
      message: 'scripted model_error',
    });
  });

  it('sleep_ms takes that long before answering', async () => {
    const started = Date.now();
    const events = await collect(req([user('!script [{"sleep_ms":120,"text":"late"}]')]));
    expect(Date.now() - started).toBeGreaterThanOrEqual(115);
    expect(textOf(events)).toBe('late');
  });

  it('sleep_ms stops at the deadline with model_timeout', async () => {
    const started = Date.now();
    await expect(collect(req([user('!script [{"sleep_ms":5000}]')], { deadline: Date.now() + 80 }))).rejects.toMatchObject({
      code: 'model_timeout',
    });
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('an abort stops a sleep at once with model_timeout', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const started = Date.now();
    await expect(collect(req([user('!script [{"sleep_ms":5000}]')], { signal: ac.signal }))).rejects.toMatchObject({ code: 'model_timeout' });
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('an abort between delayed chunks stops the stream', async () => {
    const ac = new AbortController();
    const r = req([user('!script [{"text":"abcdefghijklmnop","chunk_size":1,"delay_ms":40}]')], { signal: ac.signal });
    const seen: string[] = [];
    const run = (async () => {
      for await (const e of new ScriptedModelProvider().stream(r)) {
        if (e.type === 'text_delta') seen.push(e.text);
        if (seen.length === 2) ac.abort();
      }
    })();
    await expect(run).rejects.toMatchObject({ code: 'model_timeout' });
    expect(seen.join('')).toBe('ab');
  });

  it('an already passed deadline fails at once', async () => {
    await expect(collect(req([user('!script [{"text":"x"}]')], { deadline: Date.now() - 1 }))).rejects.toMatchObject({ code: 'model_timeout' });
  });

  it.each([
    ['not JSON', '!script [{"text":', /not valid JSON/],
    ['not an array', '!script {"text":"x"}', /must be a JSON array/],
    ['a non-object turn', '!script ["x"]', /turn 0 must be an object/],
    ['an unknown key', '!script [{"txt":"x"}]', /unknown keys: txt/],
    ['a bad chunk size', '!script [{"text":"x","chunk_size":0}]', /chunk_size/],
    ['an unknown error code', '!script [{"error":{"code":"boom"}}]', /error.code must be one of/],
    ['a nameless tool call', '!script [{"tool_calls":[{"arguments":{}}]}]', /tool_calls\[0\].name/],
  ])('a malformed script (%s) answers a text explaining it, without throwing', async (_label, text, pattern) => {
    const events = await collect(req([user(text)]));
    expect(textOf(events)).toMatch(/^The script is invalid: /);
    expect(textOf(events)).toMatch(pattern);
    expect(callsOf(events)).toEqual([]);
  });

  it('reads only the newest user message', async () => {
    const events = await collect(req([user('!script [{"text":"old"}]'), { role: 'assistant', content: [{ type: 'text', text: 'old' }] }, user('hello again')]));
    expect(textOf(events)).toBe('hello again');
  });

  it('{{last_tool_result}} in a text turn is the JSON of the newest tool result (or "null")', async () => {
    const script = '!script [{"tool_calls":[{"name":"get_time"}]},{"text":"got {{last_tool_result}}!"}]';
    const events = await collect(req([user(script), callMsg('c1', 'get_time', {}), resultMsg('c1', 'get_time', { ok: true, result: { a: ['x', 'y'] } })], { callIndex: 1 }));
    expect(textOf(events)).toBe('got {"a":["x","y"]}!');
    const failed = await collect(req([user(script), callMsg('c1', 'get_time', {}), resultMsg('c1', 'get_time', { ok: false, error: { code: 'tool_failed', message: 'no' } })], { callIndex: 1 }));
    expect(textOf(failed)).toBe('got {"error":{"code":"tool_failed","message":"no"}}!');
    expect(textOf(await collect(req([user(script)], { callIndex: 1 })))).toBe('got null!');
  });

  it('parseScript defaults tool call arguments to {}', () => {
    expect(parseScript('[{"tool_calls":[{"name":"get_time"}]}]')).toEqual({ turns: [{ tool_calls: [{ name: 'get_time', arguments: {} }] }] });
  });
});

describe('ScriptedModelProvider: built-in scenarios', () => {
  const paid = { order_id: 'O-1001', status: 'paid', paid: true, shipped: false };
  const shipped = { order_id: 'O-1002', status: 'shipped', paid: true, shipped: true, shipped_at: '2026-11-22T08:00:00.000Z' };
  const ask = user('Where is my order O-1001? It has not arrived.');

  it.each<[string, ModelMessage[], { calls?: unknown[]; text?: RegExp }]>([
    ['step 1: looks the order up', [ask], { calls: [{ name: 'get_order', arguments: { order_id: 'O-1001' } }] }],
    [
      'step 2: paid and not shipped -> opens a ticket',
      [ask, callMsg('c1', 'get_order', { order_id: 'O-1001' }), resultMsg('c1', 'get_order', { ok: true, result: paid })],
      { calls: [{ name: 'create_ticket', arguments: { order_id: 'O-1001', reason: 'Order O-1001 is paid but has not shipped yet.' } }] },
    ],
    [
      'step 3: names the ticket id',
      [
        ask,
        callMsg('c1', 'get_order', { order_id: 'O-1001' }),
        resultMsg('c1', 'get_order', { ok: true, result: paid }),
        callMsg('c2', 'create_ticket', { order_id: 'O-1001', reason: 'r' }),
        resultMsg('c2', 'create_ticket', { ok: true, result: { ticket_id: 'T-42', order_id: 'O-1001' } }),
      ],
      { text: /opened support ticket T-42/ },
    ],
    [
      'step 3 (rejected): explains why there is no ticket',
      [
        ask,
        callMsg('c1', 'get_order', { order_id: 'O-1001' }),
        resultMsg('c1', 'get_order', { ok: true, result: paid }),
        callMsg('c2', 'create_ticket', { order_id: 'O-1001', reason: 'r' }),
        resultMsg('c2', 'create_ticket', { ok: false, error: { code: 'approval_rejected', message: 'not now' } }),
      ],
      { text: /did not open a support ticket \(approval_rejected: not now\)/ },
    ],
    [
      'shipped order (O-1002): answer without a ticket',
      [user('status of O-1002?'), callMsg('c1', 'get_order', { order_id: 'O-1002' }), resultMsg('c1', 'get_order', { ok: true, result: shipped })],
      { text: /O-1002 has already shipped on 2026-11-22, so no support ticket is needed/ },
    ],
    [
      'unknown id: not found answer',
      [
        user('what about O-9999'),
        callMsg('c1', 'get_order', { order_id: 'O-9999' }),
        resultMsg('c1', 'get_order', { ok: true, result: { status: 'not_found', order_id: 'O-9999' } }),
      ],
      { text: /could not find an order with the id O-9999/ },
    ],
    [
      'unpaid order: no ticket',
      [
        user('O-1003?'),
        callMsg('c1', 'get_order', { order_id: 'O-1003' }),
        resultMsg('c1', 'get_order', { ok: true, result: { order_id: 'O-1003', status: 'awaiting_payment', paid: false, shipped: false } }),
      ],
      { text: /status "awaiting_payment"; it is not paid yet/ },
    ],
    [
      'failed lookup: explains',
      [ask, callMsg('c1', 'get_order', { order_id: 'O-1001' }), resultMsg('c1', 'get_order', { ok: false, error: { code: 'tool_timeout', message: 'slow' } })],
      { text: /could not look up order O-1001 \(tool_timeout: slow\)/ },
    ],
    ['weather: asks get_weather', [user("What's the weather in Paris?")], { calls: [{ name: 'get_weather', arguments: { location: 'Paris' } }] }],
    [
      'weather: answers with the result',
      [
        user('weather in Paris'),
        callMsg('c1', 'get_weather', { location: 'Paris' }),
        resultMsg('c1', 'get_weather', { ok: true, result: { location: 'Paris', conditions: 'sunny', temperature_c: 21, humidity_pct: 40, wind_kph: 5 } }),
      ],
      { text: /^The weather in Paris is sunny, 21°C \(humidity 40%, wind 5 km\/h\)\.$/ },
    ],
    ['weather: drops a trailing "today"', [user('How is the weather in New York today?')], { calls: [{ name: 'get_weather', arguments: { location: 'New York' } }] }],
    ['time: asks get_time', [user('What time is it?')], { calls: [{ name: 'get_time', arguments: {} }] }],
    [
      'time: answers with the result',
      [user('time please'), callMsg('c1', 'get_time', {}), resultMsg('c1', 'get_time', { ok: true, result: { iso: '2026-11-30T09:00:00.000Z', timezone: 'UTC' } })],
      { text: /^The current time is 2026-11-30T09:00:00.000Z \(UTC\)\.$/ },
    ],
    ['echo: anything else', [user('Hello there, agent')], { text: /^Hello there, agent$/ }],
    [
      'a new user message starts over: results of earlier turns are ignored',
      [ask, callMsg('c1', 'get_order', { order_id: 'O-1001' }), resultMsg('c1', 'get_order', { ok: true, result: paid }), user('and O-1002?')],
      { calls: [{ name: 'get_order', arguments: { order_id: 'O-1002' } }] },
    ],
  ])('%s', async (_label, messages, expected) => {
    const events = await collect(req(messages));
    if (expected.calls) {
      expect(callsOf(events)).toEqual(expected.calls);
      expect(textOf(events)).toBe('');
    } else {
      expect(callsOf(events)).toEqual([]);
      expect(textOf(events)).toMatch(expected.text!);
    }
  });

  it('matches a result to its call by id when the result has no tool name', async () => {
    const bare: ModelMessage = { role: 'tool', content: [{ type: 'tool_result', tool_call_id: 'c1', ok: true, result: { status: 'not_found' } } as ContentPart] };
    const events = await collect(req([user('O-4242'), callMsg('c1', 'get_order', { order_id: 'O-4242' }), bare]));
    expect(textOf(events)).toMatch(/could not find an order/);
  });

  it('does not call a tool the agent does not offer', async () => {
    const events = await collect(req([user('order O-1001')], { tools: [] }));
    expect(callsOf(events)).toEqual([]);
    expect(textOf(events)).toMatch(/get_order tool is not available/);
  });

  it('describes attachments of an otherwise empty message', async () => {
    const events = await collect(
      req([{ role: 'user', content: [{ type: 'attachment_ref', attachment_id: 'att_1' }] }], {
        attachments: [{ attachment_id: 'att_1', filename: 'a.txt', media_type: 'text/plain', size_bytes: 3, text: 'abc' }],
      }),
    );
    expect(textOf(events)).toBe('I received a.txt (text/plain, 3 bytes).');
  });
});

describe('ScriptedModelProvider: usage', () => {
  it.each([
    // input chars: the text; output chars: the emitted text
    ['text in, text out', [user('abcdefghi')], 'abcdefghi', 3, 3],
    ['empty output', [user('!script [{"text":""}]')], '', 6, 0],
  ])('%s', async (_label, messages, out, inTokens, outTokens) => {
    const events = await collect(req(messages));
    expect(textOf(events)).toBe(out);
    expect(events.filter((e) => e.type === 'usage')).toEqual([{ type: 'usage', input_tokens: inTokens, output_tokens: outTokens }]);
  });

  it('counts tool parts as JSON and tool calls as JSON', async () => {
    const messages = [user('O-1001'), callMsg('c1', 'get_order', { order_id: 'O-1001' }), resultMsg('c1', 'get_order', { ok: true, result: { order_id: 'O-1001', status: 'paid', paid: true, shipped: false } })];
    const chars = 'O-1001'.length + messages.slice(1).reduce((n, m) => n + JSON.stringify(m.content[0]).length, 0);
    const events = await collect(req(messages));
    const call = events.find((e) => e.type === 'tool_call') as Extract<ModelStreamEvent, { type: 'tool_call' }>;
    const outChars = JSON.stringify({ name: call.name, arguments: call.arguments }).length;
    expect(events[events.length - 1]).toEqual({ type: 'usage', input_tokens: Math.ceil(chars / 4), output_tokens: Math.ceil(outChars / 4) });
  });
});
