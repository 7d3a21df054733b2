import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

const script = (turns: unknown[]) => `!script ${JSON.stringify(turns)}`;

async function waitFor(t: TestApp, key: string, runId: string, pred: (r: any) => boolean, ms = 15000) {
  const until = Date.now() + ms;
  for (;;) {
    const r = await t.call(key, 'GET', `/v1/runs/${runId}`);
    if (pred(r.body)) return r.body;
    if (Date.now() > until) throw new Error(`timeout waiting for run ${runId}: ${JSON.stringify(r.body)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

describe('runs (basic)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('runs a scripted tool call to completion', async () => {
    const s = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', {});
    const text = script([{ tool_calls: [{ name: 'get_time', arguments: {} }] }, { text: 'It is late.', chunk_size: 3 }]);
    const r = await t.call(KEYS.memberA1, 'POST', `/v1/sessions/${s.body.id}/runs`, { input: { role: 'user', content: [{ type: 'text', text }] } }, { 'idempotency-key': 'k1' });
    expect(r.status).toBe(202);
    expect(r.headers.get('location')).toBe(`/v1/runs/${r.body.run_id}`);
    const run = await waitFor(t, KEYS.memberA1, r.body.run_id, (x) => x.status === 'completed');
    expect(run.usage.tool_calls).toBe(1);
    expect(run.step_count).toBe(2);
    const events = await t.call(KEYS.memberA1, 'GET', `/v1/runs/${r.body.run_id}/events?limit=1000`);
    const types = events.body.data.map((e: any) => e.type);
    expect(types[0]).toBe('run.started');
    expect(types[types.length - 1]).toBe('run.finished');
    expect(types).toContain('tool.completed');
    const deltas = events.body.data.filter((e: any) => e.type === 'message.delta').map((e: any) => e.data.delta).join('');
    expect(deltas).toBe('It is late.');
    const msgs = await t.call(KEYS.memberA1, 'GET', `/v1/sessions/${s.body.id}/messages`);
    expect(msgs.status).toBe(200);
  });
});
