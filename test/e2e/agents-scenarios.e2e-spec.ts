import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

jest.setTimeout(60_000);

/** The scripted model's built-in scenarios driven through the real run loop (HTTP in, events out). */
describe('scripted model scenarios through real runs', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  async function runToEnd(agentId: string, text: string): Promise<{ run: any; events: any[] }> {
    const s = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', { agent_id: agentId });
    expect(s.status).toBe(201);
    const r = await t.call(
      KEYS.memberA1,
      'POST',
      `/v1/sessions/${s.body.id}/runs`,
      { input: { role: 'user', content: [{ type: 'text', text }] } },
      { 'idempotency-key': `scenario-${Math.random()}` },
    );
    expect(r.status).toBe(202);
    const until = Date.now() + 30_000;
    let run: any;
    for (;;) {
      run = (await t.call(KEYS.memberA1, 'GET', `/v1/runs/${r.body.run_id}`)).body;
      if (['completed', 'failed', 'terminated', 'cancelled', 'expired', 'waiting_for_approval', 'waiting_for_tool'].includes(run.status)) break;
      if (Date.now() > until) throw new Error(`run did not finish: ${JSON.stringify(run)}`);
      await new Promise((res) => setTimeout(res, 50));
    }
    const events = (await t.call(KEYS.memberA1, 'GET', `/v1/runs/${r.body.run_id}/events?limit=1000`)).body.data;
    return { run, events };
  }

  const finalText = (events: any[]) => {
    const done = events.filter((e) => e.type === 'message.completed').pop();
    return done.data.content.map((p: { text?: string }) => p.text ?? '').join('');
  };

  it.each<[string, string, string, RegExp]>([
    ['assistant', 'What is the weather in Paris?', 'get_weather', /^The weather in Paris is .+°C/],
    ['assistant', 'What time is it?', 'get_time', /^The current time is \d{4}-\d\d-\d\dT.+Z \(UTC\)\.$/],
    ['support_agent', 'Where is my order O-1002?', 'get_order', /O-1002 has already shipped/],
    ['support_agent', 'Where is my order O-5555?', 'get_order', /could not find an order with the id O-5555/],
  ])('%s: %s -> %s, then an answer', async (agent, text, tool, answer) => {
    const { run, events } = await runToEnd(agent, text);
    expect(run.status).toBe('completed');
    expect(events.filter((e) => e.type === 'tool.completed').map((e) => e.data.tool_name)).toEqual([tool]);
    expect(finalText(events)).toMatch(answer);
  });

  it('echoes anything else', async () => {
    const { run, events } = await runToEnd('assistant', 'Hello, agent!');
    expect(run.status).toBe('completed');
    expect(finalText(events)).toBe('Hello, agent!');
    expect(events.find((e) => e.type === 'usage').data).toMatchObject({ input_tokens: 4, output_tokens: 4, model_calls: 1 });
  });
});
