import { KEYS, startTestApp, TestApp } from '../helpers/test-app';
import { contractOrderProblems, createSession, isTerminal, runEvents, script, startRun, userInput, waitForRun } from '../helpers/runs';

/**
 * A model turn writes its message (and message.started) with its first write: its completion when
 * the model answers within 50 ms, else at 50 ms or with its first deltas (TurnWrites, runs/worker/run-writer.ts). Whatever
 * comes first, the turn has one message row, its events are in contract order and the deltas add
 * up to the completed text.
 */
describe('model turn writes', () => {
  let t: TestApp;
  const key = KEYS.memberA1;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  async function runOf(turns: unknown[]) {
    const sid = await createSession(t, key);
    const started = await startRun(t, key, sid, { input: userInput(script(turns)) });
    expect(started.status).toBe(202);
    const run = await waitForRun(t, key, started.body.run_id, isTerminal, 20_000);
    const events = await runEvents(t, key, run.id);
    const history = await t.call(key, 'GET', `/v1/sessions/${sid}/messages?limit=100`);
    const assistant = history.body.data.filter((m: any) => m.role === 'assistant' && m.run_id === run.id);
    return { run, events, assistant };
  }

  it.each([
    ['answers at once (one write: the completion)', { text: 'a'.repeat(40), chunk_size: 4, delay_ms: 0 }],
    ['streams across the 50 ms mark (first deltas and the start write race)', { text: 'b'.repeat(200), chunk_size: 4, delay_ms: 2 }],
    ['flushes 4 KiB of deltas just before the 50 ms mark (the start write must not append again)', { sleep_ms: 44, text: 'd'.repeat(8192), chunk_size: 512, delay_ms: 0 }],
    ['waits before answering (the start is written at 50 ms)', { sleep_ms: 150, text: 'c'.repeat(20), chunk_size: 4, delay_ms: 0 }],
  ])('a turn that %s: one message row, contract order, deltas = text', async (_name, turn) => {
    for (let i = 0; i < 4; i++) {
      const { run, events, assistant } = await runOf([turn]);
      expect(run.status).toBe('completed');
      expect(run.step_count).toBe(1);
      expect(run.usage.model_calls).toBe(1);
      expect(contractOrderProblems(events)).toEqual([]);
      expect(assistant).toHaveLength(1);
      expect(assistant[0].status).toBe('completed');
      const text = (turn as { text: string }).text;
      expect(assistant[0].content).toEqual([{ type: 'text', text }]);
      const deltas = events.filter((e) => e.type === 'message.delta').map((e) => e.data.delta).join('');
      expect(deltas).toBe(text);
      expect(events.filter((e) => e.type === 'message.started')).toHaveLength(1);
    }
  });

  it('a tool-call turn, then an answer: each turn one message, both completed, the session settled', async () => {
    const { run, events, assistant } = await runOf([{ tool_calls: [{ name: 'get_time', arguments: {} }] }, { text: 'done', chunk_size: 2 }]);
    expect(run.status).toBe('completed');
    expect(contractOrderProblems(events)).toEqual([]);
    expect(assistant.map((m: any) => m.status)).toEqual(['completed', 'completed']);
    const session = await t.call(key, 'GET', `/v1/sessions/${run.session_id}`);
    expect(session.body.active_run_id).toBeNull();
  });

  it('later turns see exactly the history a fresh read gives (read once per execution, then its own messages)', async () => {
    // The scripted model counts its input: ceil(chars / 4) per turn, summed in usage.input_tokens.
    const { run } = await runOf([
      { tool_calls: [{ name: 'get_time', arguments: {} }] },
      { tool_calls: [{ name: 'get_time', arguments: { zone: 'UTC' } }] },
      { text: 'done' },
    ]);
    expect(run.status).toBe('completed');
    const history = (await t.call(key, 'GET', `/v1/sessions/${run.session_id}/messages?limit=100&order=asc`)).body.data;
    const chars = (m: any) => m.content.reduce((n: number, p: any) => n + (p.type === 'text' ? p.text.length : JSON.stringify(p).length), 0);
    // Turn k sees the input and what the run committed before it: assistant turns and tool results, in order.
    const own = history.filter((m: any) => m.run_id === run.id && m.role !== 'user');
    const input = history.filter((m: any) => m.role === 'user');
    const turnStarts = own.map((m: any, i: number) => (m.role === 'assistant' ? i : -1)).filter((i: number) => i >= 0);
    expect(turnStarts).toHaveLength(3);
    const expected = turnStarts.reduce((sum: number, upTo: number) => {
      const seen = [...input, ...own.slice(0, upTo)];
      return sum + Math.ceil(seen.reduce((n: number, m: any) => n + chars(m), 0) / 4);
    }, 0);
    expect(run.usage.input_tokens).toBe(expected);
    expect(run.usage.model_calls).toBe(3);
  });
});
