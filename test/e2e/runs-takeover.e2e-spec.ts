import { DataSource } from 'typeorm';
import { RunExecutor } from '../../src/modules/runs/worker/run-executor';
import { contractOrderProblems, createSession, isTerminal, runEvents, script, startRun, userInput, waitForRun } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * A worker that loses its lease mid-run (it stops writing, as a crashed or partitioned node
 * would) and whose lease then expires: the run is taken over and finishes exactly once.
 */
describe('lease take-over', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ RUN_LEASE_MS: '1500' });
  });
  afterAll(async () => {
    await t.close();
  });
  const key = KEYS.memberA1;

  async function loseLeaseWhen(runId: string, pred: (events: any[]) => boolean) {
    const until = Date.now() + 15000;
    for (;;) {
      const events = await runEvents(t, key, runId);
      if (pred(events)) break;
      if (Date.now() > until) throw new Error('condition never held');
      await new Promise((r) => setTimeout(r, 20));
    }
    // The executing worker goes silent (no further writes) ...
    expect(t.app.get(RunExecutor).stopAll()).toBe(1);
    // ... and its lease runs out.
    await t.app.get(DataSource).query(`UPDATE runs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [runId]);
  }

  it('takes over a run lost in the middle of streaming an answer', async () => {
    const sid = await createSession(t, key);
    const text = 'abcdefghij'.repeat(30);
    const r = await startRun(t, key, sid, { input: userInput(script([{ text, chunk_size: 5, delay_ms: 20 }])) });
    await loseLeaseWhen(r.body.run_id, (ev) => ev.some((e) => e.type === 'message.delta'));
    const done = await waitForRun(t, key, r.body.run_id, isTerminal);
    expect(done.status).toBe('completed');
    expect(done.step_count).toBe(1); // the interrupted turn was redone, not counted twice
    const events = await runEvents(t, key, r.body.run_id);
    expect(contractOrderProblems(events)).toEqual([]);
    expect(events.filter((e) => e.type === 'run.finished')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'run.started')).toHaveLength(1);
    const final = await t.call(key, 'GET', `/v1/sessions/${sid}/messages/${done.final_message_id}`);
    expect(final.body.content).toEqual([{ type: 'text', text }]);
  });

  it('re-runs an idempotent tool with the same key after a take-over mid-tool', async () => {
    const sid = await createSession(t, key);
    const r = await startRun(t, key, sid, { input: userInput(script([{ tool_calls: [{ name: 'slow_tool', arguments: { ms: 1500 } }] }, { text: 'done' }])) });
    await loseLeaseWhen(r.body.run_id, (ev) => ev.some((e) => e.type === 'tool.started'));
    const done = await waitForRun(t, key, r.body.run_id, isTerminal);
    expect(done.status).toBe('completed');
    const events = await runEvents(t, key, r.body.run_id);
    expect(contractOrderProblems(events)).toEqual([]);
    const starts = events.filter((e) => e.type === 'tool.started');
    expect(starts.map((e) => e.data.attempt)).toEqual([1, 2]);
    expect(new Set(starts.map((e) => e.data.tool_call_id)).size).toBe(1);
    expect(events.filter((e) => e.type === 'tool.completed')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'run.finished')).toHaveLength(1);
  });

  it('records a non-idempotent tool interrupted by a take-over as outcome_unknown and shows it to the model', async () => {
    const sid = await createSession(t, key);
    const r = await startRun(t, key, sid, {
      input: userInput(script([{ tool_calls: [{ name: 'notify_customer', arguments: { order_id: 'O-1001', message: 'on its way', ms: 3000 } }] }, { text: 'checked' }])),
    });
    await loseLeaseWhen(r.body.run_id, (ev) => ev.some((e) => e.type === 'tool.started'));
    const done = await waitForRun(t, key, r.body.run_id, isTerminal);
    expect(done.status).toBe('completed');
    const events = await runEvents(t, key, r.body.run_id);
    expect(contractOrderProblems(events)).toEqual([]);
    expect(events.filter((e) => e.type === 'tool.started')).toHaveLength(1); // never re-run
    const failed = events.find((e) => e.type === 'tool.failed');
    expect(failed.data).toMatchObject({ tool_name: 'notify_customer', error: { code: 'outcome_unknown', retryable: false } });
    const msgs = await t.call(key, 'GET', `/v1/sessions/${sid}/messages?limit=100`);
    const toolMsg = msgs.body.data.find((m: any) => m.role === 'tool');
    expect(toolMsg.content[0]).toMatchObject({ type: 'tool_result', ok: false, error: { code: 'outcome_unknown' } });
  });
});
