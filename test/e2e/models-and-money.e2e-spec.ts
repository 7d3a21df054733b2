import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ANSWER_TURN, FakeProviders, fakeModelEntry, FLAVOURS, startFakeProviders, TOOL_TURN } from '../helpers/fake-model-providers';
import { contractOrderProblems, createSession, isTerminal, runEvents, script, startRun, userInput, waitForRun } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * CONTRACT 18 end to end: the same agent run against each fake provider (wire-exact fake servers
 * on loopback), costs from the registry's prices, spend limits and cancel closing the upstream.
 */
const PRICE = { input_per_mtok: 3, output_per_mtok: 15, cached_input_per_mtok: 0.3 };

/** By hand from the fixtures: (uncached input x 3 + cached x 0.3 + output x 15) / 1e6 per turn. */
function handCost(): string {
  // tool turn: (1200 - 200) x 3 + 200 x 0.3 + 30 x 15 = 3000 + 60 + 450 = 3510 micro-dollars
  // answer turn: 1300 x 3 + 0 + 20 x 15 = 3900 + 300 = 4200 micro-dollars
  expect(TOOL_TURN.usage).toEqual({ input: 1200, output: 30, cached: 200, reasoning: 10 });
  expect(ANSWER_TURN.usage).toEqual({ input: 1300, output: 20, cached: 0, reasoning: 0 });
  return '0.00771';
}

describe('models and money (#27)', () => {
  let t: TestApp;
  let fake: FakeProviders;
  let dir: string;

  beforeAll(async () => {
    fake = await startFakeProviders();
    dir = mkdtempSync(join(tmpdir(), 'models-'));
    const file = join(dir, 'models.json');
    writeFileSync(
      file,
      JSON.stringify([
        { id: 'scripted', provider: 'scripted', model: 'scripted', price: { input_per_mtok: 1, output_per_mtok: 2, cached_input_per_mtok: 0.5 } },
        ...FLAVOURS.map((f) => fakeModelEntry(f, fake, PRICE)),
      ]),
    );
    // The operator's file names the key's variable; the process environment holds it.
    process.env.FAKE_MODEL_KEY = 'sk-fake-e2e';
    t = await startTestApp({ MODELS_FILE: file, MODEL_RETRY_BASE_MS: '10' });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await fake?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('GET /v1/models lists the registry with prices and without keys or endpoints', async () => {
    const r = await t.call(KEYS.memberA1, 'GET', '/v1/models');
    expect(r.status).toBe(200);
    expect(r.body.object).toBe('list');
    expect(r.body.data.map((m: any) => m.id)).toEqual(['scripted', ...FLAVOURS.map((f) => `fake-${f}`)]);
    expect(r.body.data[1]).toEqual({
      id: 'fake-openai',
      object: 'model',
      provider: 'openai',
      model: 'fake-model',
      context_window: null,
      max_output_tokens: 4096,
      price: { input_per_mtok: '3', output_per_mtok: '15', cached_input_per_mtok: '0.3', currency: 'USD' },
    });
    expect(r.text).not.toContain('sk-fake-e2e');
    expect(r.text).not.toContain('FAKE_MODEL_KEY');
    expect(r.text).not.toContain('127.0.0.1');
  });

  it('an unknown model is 400 naming the field, for runs and for agents', async () => {
    const sid = await createSession(t, KEYS.adminA, { agent_id: 'assistant' });
    const run = await startRun(t, KEYS.adminA, sid, { input: userInput('hi'), model: 'fake-model' });
    expect(run.status).toBe(400);
    expect(run.body.error.code).toBe('invalid_request');
    expect(run.body.error.details.errors[0].field).toBe('model');
    const agent = await t.call(KEYS.adminA, 'POST', '/v1/agents', { id: 'm_agent', model: 'gpt-unknown', instructions: 'x', tools: [] });
    expect(agent.status).toBe(400);
    expect(agent.body.error.details.errors.map((e: any) => e.field)).toContain('model');
    const inline = await t.call(KEYS.adminA, 'POST', '/v1/sessions', { agent: { model: 'nope', instructions: 'x', tools: [] } });
    expect(inline.status).toBe(400);
    expect(inline.body.error.details.errors.map((e: any) => e.field)).toContain('agent.model');
  });

  it.each(FLAVOURS)('the same agent run over %s completes with a tool call, tokens and the hand-computed cost', async (f) => {
    const sid = await createSession(t, KEYS.adminA, { agent_id: 'assistant' });
    const started = await startRun(t, KEYS.adminA, sid, { input: userInput('What is the weather in Paris?'), model: `fake-${f}` });
    expect(started.status).toBe(202);
    const run = await waitForRun(t, KEYS.adminA, started.body.run_id, isTerminal);
    expect(run.status).toBe('completed');
    const reasoning = f === 'anthropic' || f === 'bedrock' ? 0 : 10; // their streams carry no reasoning count in these fixtures
    expect(run.usage).toEqual({
      input_tokens: 2500,
      output_tokens: 50,
      cached_input_tokens: 200,
      reasoning_tokens: reasoning,
      estimated_cost: { amount: handCost(), currency: 'USD' },
      model_calls: 2,
      tool_calls: 1,
    });
    const events = await runEvents(t, KEYS.adminA, run.id);
    const requested = events.find((e) => e.type === 'tool.requested');
    expect(requested.data).toMatchObject({ tool_name: 'get_weather', arguments: { location: 'Paris' } });
    expect(events.find((e) => e.type === 'tool.completed')).toBeDefined();
    const text = events.filter((e) => e.type === 'message.delta').map((e) => e.data.delta).join('');
    expect(text).toBe('It is sunny in Paris.');
    const finished = events.at(-1);
    expect(finished.type).toBe('run.finished');
    expect(finished.data.usage.estimated_cost).toEqual({ amount: '0.00771', currency: 'USD' });
    expect(events.at(-2).data.estimated_cost).toEqual({ amount: '0.00771', currency: 'USD' });
    // The provider got our tool result back in its own shape.
    const second = fake.received.filter((r) => r.flavour === f).at(-1)!;
    expect(JSON.stringify(second.body)).toContain('Paris');
  });

  it('a provider error maps to the run-level code (context_length_exceeded, model_auth_failed)', async () => {
    const sid = await createSession(t, KEYS.adminA, { agent_id: 'assistant' });
    const a = await startRun(t, KEYS.adminA, sid, { input: userInput('scenario:context'), model: 'fake-anthropic' });
    const ra = await waitForRun(t, KEYS.adminA, a.body.run_id, isTerminal);
    expect(ra.status).toBe('failed');
    expect(ra.error.code).toBe('context_length_exceeded');
    const b = await startRun(t, KEYS.adminA, sid, { input: userInput('scenario:auth'), model: 'fake-google' });
    const rb = await waitForRun(t, KEYS.adminA, b.body.run_id, isTerminal);
    expect(rb.error.code).toBe('model_auth_failed');
  });

  it('cancel mid-stream closes the upstream connection within 100 ms', async () => {
    const sid = await createSession(t, KEYS.adminA, { agent_id: 'assistant' });
    const before = fake.received.length;
    const r = await startRun(t, KEYS.adminA, sid, { input: userInput('scenario:hang'), model: 'fake-compat' });
    const index = await (async () => {
      for (let i = 0; i < 400; i++) {
        const at = fake.received.findIndex((x, j) => j >= before && JSON.stringify(x.body).includes('scenario:hang'));
        if (at >= 0 && fake.hungAt.has(at)) return at;
        await new Promise((res) => setTimeout(res, 10));
      }
      throw new Error('the model was not called');
    })();
    await waitForRun(t, KEYS.adminA, r.body.run_id, (x) => x.status === 'running');
    const cancelSent = Date.now();
    const c = await t.call(KEYS.adminA, 'POST', `/v1/runs/${r.body.run_id}/cancel`);
    const answered = Date.now();
    expect(c.status).toBe(202);
    for (let i = 0; i < 100 && !fake.closedAt.has(index); i++) await new Promise((res) => setTimeout(res, 5));
    if (process.env.DEBUG_I27) console.log({ request: answered - cancelSent, close: fake.closedAt.get(index)! - cancelSent });
    // Measured from the cancel's answer (the request itself can take longer on a loaded machine): the
    // executor aborts the call right after the cancel commits, and the fake server sees the socket close.
    expect(fake.closedAt.get(index)! - answered).toBeLessThanOrEqual(100);
    const done = await waitForRun(t, KEYS.adminA, r.body.run_id, isTerminal);
    expect(done.status).toBe('cancelled');
  });

  it('spend limits: usage by model, day and agent; over the limit new runs get 429 quota_exceeded with resets_at', async () => {
    const usage = await t.call(KEYS.adminB, 'GET', '/v1/admin/usage?group_by=model');
    expect(usage.status).toBe(200);
    expect(usage.body.data).toEqual([]); // tenant B has spent nothing
    const sid = await createSession(t, KEYS.adminB, { agent_id: 'assistant' });
    const first = await startRun(t, KEYS.adminB, sid, { input: userInput('Weather in Paris?'), model: 'fake-openai' });
    expect((await waitForRun(t, KEYS.adminB, first.body.run_id, isTerminal)).status).toBe('completed');

    const byModel = await t.call(KEYS.adminB, 'GET', '/v1/admin/usage?group_by=model');
    expect(byModel.body.data).toEqual([
      { key: 'fake-openai', runs: 1, model_calls: 2, input_tokens: 2500, cached_input_tokens: 200, output_tokens: 50, reasoning_tokens: 10, estimated_cost: { amount: '0.00771', currency: 'USD' } },
    ]);
    expect(byModel.body.total_cost).toEqual({ amount: '0.00771', currency: 'USD' });
    const byAgent = await t.call(KEYS.adminB, 'GET', '/v1/admin/usage?group_by=agent');
    expect(byAgent.body.data.map((g: any) => g.key)).toEqual(['assistant']);
    const byDay = await t.call(KEYS.adminB, 'GET', '/v1/admin/usage');
    expect(byDay.body.data.map((g: any) => g.key)).toEqual([new Date().toISOString().slice(0, 10)]);
    expect((await t.call(KEYS.memberB, 'GET', '/v1/admin/usage')).status).toBe(403);
    expect((await t.call(KEYS.adminB, 'GET', '/v1/admin/usage?group_by=week')).status).toBe(400);

    const bad = await t.call(KEYS.adminB, 'PUT', '/v1/admin/spend_limit', { amount: 1, window: 'year' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.errors.map((e: any) => e.field).sort()).toEqual(['amount', 'window']);
    expect((await t.call(KEYS.adminB, 'GET', '/v1/admin/spend_limit')).body.limit).toBeNull();

    // Above what was spent: runs go on.
    const high = await t.call(KEYS.adminB, 'PUT', '/v1/admin/spend_limit', { amount: '0.01', window: 'day' });
    expect(high.status).toBe(200);
    expect(high.body).toMatchObject({ object: 'spend_limit', limit: { amount: '0.01', currency: 'USD' }, window: 'day', spent: { amount: '0.00771', currency: 'USD' } });
    const ok = await startRun(t, KEYS.adminB, sid, { input: userInput('scenario:text'), model: 'fake-openai' });
    expect(ok.status).toBe(202);
    await waitForRun(t, KEYS.adminB, ok.body.run_id, isTerminal);

    // At or under what was spent: 429 quota_exceeded, not retryable, with when the window resets.
    const low = await t.call(KEYS.adminB, 'PUT', '/v1/admin/spend_limit', { amount: '0.005', window: 'month' });
    expect(low.status).toBe(200);
    const refused = await startRun(t, KEYS.adminB, sid, { input: userInput('again'), model: 'scripted' });
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({ code: 'quota_exceeded', type: 'rate_limit', retryable: false });
    const now = new Date();
    expect(refused.body.error.details.resets_at).toBe(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString());
    expect(refused.body.error.details.limit).toEqual({ amount: '0.005', currency: 'USD', window: 'month' });
    // The OpenAI surface starts runs too: refused the same way.
    const os = await t.call(KEYS.adminB, 'POST', '/openai/v1/agents/sessions', { agent_id: 'assistant', environment: { type: 'none' } });
    expect(os.status).toBe(200);
    const conv = await t.call(KEYS.adminB, 'POST', `/openai/v1/agents/sessions/${os.body.id}/events`, {
      events: [{ type: 'agent.session.input.message', input: [{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }] }],
    });
    expect(conv.status).toBe(429);
    expect(conv.body.error.code).toBe('quota_exceeded');
    // Tenant A is not limited by B's limit.
    const sa = await createSession(t, KEYS.adminA, { agent_id: 'assistant' });
    expect((await startRun(t, KEYS.adminA, sa, { input: userInput('hello') })).status).toBe(202);

    expect((await t.call(KEYS.adminB, 'DELETE', '/v1/admin/spend_limit')).status).toBe(204);
    expect((await startRun(t, KEYS.adminB, sid, { input: userInput('after'), model: 'scripted' })).status).toBe(202);
  });

  it('the scripted model is priced: its runs report a cost from their (estimated) tokens', async () => {
    const sid = await createSession(t, KEYS.adminA, { agent_id: 'assistant' });
    const r = await startRun(t, KEYS.adminA, sid, { input: userInput('hello there') });
    const run = await waitForRun(t, KEYS.adminA, r.body.run_id, isTerminal);
    const u = run.usage;
    expect(u.input_tokens).toBeGreaterThan(0);
    // 1 USD per million input, 2 per million output; no cache.
    const micro = u.input_tokens * 1 + u.output_tokens * 2;
    expect(u.estimated_cost.amount).toBe((micro / 1e6).toFixed(6).replace(/\.?0+$/, ''));
  });

  it('limits.max_cost: the first call fits, the one that would exceed it is never made (cost_budget)', async () => {
    const sid = await createSession(t, KEYS.adminA, { agent_id: 'assistant' });
    // Scripted prices: 1 USD / M input, 2 / M output; no max_output_tokens in the file: 4096.
    // Call 1 estimate: ~(2,200 chars of context / 4) x 1e-6 + 4096 x 2e-6 = ~0.0087 (fits 0.0095);
    // it costs ~0.00155 (500 output tokens). Call 2 estimate: 0.00155 + ~1,100 input tokens x 1e-6
    // + 0.008192 = ~0.0108: over the budget, so the run ends before it.
    const turns = [{ text: 'x'.repeat(2000), chunk_size: 500, tool_calls: [{ name: 'get_time', arguments: {} }] }, { text: 'never said' }];
    const r = await startRun(t, KEYS.adminA, sid, { input: userInput(script(turns)), limits: { max_cost: '0.00950' } });
    expect(r.status).toBe(202);
    const run = await waitForRun(t, KEYS.adminA, r.body.run_id, isTerminal);
    expect(run).toMatchObject({ status: 'terminated', termination_reason: 'cost_budget', step_count: 1, final_message_id: null });
    expect(run.limits.max_cost).toBe('0.0095');
    expect(run.usage).toMatchObject({ model_calls: 1, tool_calls: 1, estimated_cost: { currency: 'USD' } });
    // Exactly the first call's cost, and within the budget.
    const micro = run.usage.input_tokens * 1 + run.usage.output_tokens * 2;
    expect(run.usage.estimated_cost.amount).toBe((micro / 1e6).toFixed(6).replace(/\.?0+$/, ''));
    expect(Number(run.usage.estimated_cost.amount)).toBeGreaterThan(0.001);
    expect(Number(run.usage.estimated_cost.amount)).toBeLessThanOrEqual(0.0095);
    const events = await runEvents(t, KEYS.adminA, run.id);
    expect(contractOrderProblems(events)).toEqual([]);
    expect(events.filter((e) => e.type === 'message.started')).toHaveLength(1);
    expect(events[events.length - 1]).toMatchObject({ type: 'run.finished', data: { status: 'terminated', termination_reason: 'cost_budget' } });
    expect(events[events.length - 1].data.usage.estimated_cost.amount).toBe(run.usage.estimated_cost.amount);

    // The same script with room for both calls completes; without a budget, max_cost is null.
    const roomy = await startRun(t, KEYS.adminA, sid, { input: userInput(script(turns)), limits: { max_cost: '0.05' } });
    const done = await waitForRun(t, KEYS.adminA, roomy.body.run_id, isTerminal);
    expect(done).toMatchObject({ status: 'completed', usage: { model_calls: 2 } });
    const free = await startRun(t, KEYS.adminA, sid, { input: userInput('hello') });
    expect((await waitForRun(t, KEYS.adminA, free.body.run_id, isTerminal)).limits.max_cost).toBeNull();
  });

  it.each([['0'], ['-1'], ['abc'], ['1e-3'], [0.5], ['0.0000000000001']])('limits.max_cost %j is 400 naming limits.max_cost', async (max_cost) => {
    const sid = await createSession(t, KEYS.adminA, { agent_id: 'assistant' });
    const r = await startRun(t, KEYS.adminA, sid, { input: userInput('hi'), limits: { max_cost } });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_request');
    expect(r.body.error.details.errors.map((e: any) => e.field)).toEqual(['limits.max_cost']);
  });
});
