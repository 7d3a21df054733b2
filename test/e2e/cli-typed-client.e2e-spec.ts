import { AgentApiClient, ApiError } from '../../clients/ts/src/client';
import { streamRunEvents, type AgentEvent } from '../../clients/ts/src/sse';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

describe('typed client (clients/ts) against a test app', () => {
  let t: TestApp;
  let client: AgentApiClient;
  beforeAll(async () => {
    t = await startTestApp();
    client = new AgentApiClient({ baseUrl: t.url, apiKey: KEYS.memberA1 });
  });
  afterAll(async () => {
    await t.close();
  });

  it('maps the error envelope to a typed ApiError', async () => {
    const err = await client.getSession('sess_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 404, code: 'session_not_found', type: 'not_found', retryable: false });
    expect((err as ApiError).requestId).toMatch(/^req_/);
    const bad = new AgentApiClient({ baseUrl: t.url, apiKey: 'unknown-key-0000' });
    await expect(bad.listSessions()).rejects.toMatchObject({ status: 401, code: 'unauthorized' });
  });

  it('sends an Idempotency-Key on POSTs: the same key replays the same session', async () => {
    const fixed = new AgentApiClient({ baseUrl: t.url, apiKey: KEYS.memberA1, idempotencyKey: () => 'typed-client-fixed-key' });
    const a = await fixed.createSession({ title: 'same' });
    const b = await fixed.createSession({ title: 'same' });
    expect(b.id).toBe(a.id);
    const c = await client.createSession({ title: 'same' });
    expect(c.id).not.toBe(a.id);
  });

  it('streams typed run events in order, ends after run.finished, and resumes after a given event id', async () => {
    const session = await client.createSession({});
    const receipt = await client.sendText(session.id, `!script ${JSON.stringify([{ text: 'one two three four', chunk_size: 4, delay_ms: 5 }])}`);
    const events: AgentEvent[] = [];
    for await (const ev of streamRunEvents(client, receipt.run_id)) events.push(ev);
    expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
    expect(events[0].type).toBe('run.started');
    const last = events[events.length - 1];
    expect(last.type).toBe('run.finished');
    if (last.type === 'run.finished') expect(last.data.status).toBe('completed');
    const text = events.map((e) => (e.type === 'message.delta' ? e.data.delta : '')).join('');
    expect(text).toBe('one two three four');
    // The receipt, typed: now taken by the run.
    expect(receipt.receipt).toMatchObject({ disposition: 'started', run_id: receipt.run_id });
    const input = await client.getInput(receipt.receipt.id);
    expect(input).toMatchObject({ id: receipt.receipt.id, object: 'input', disposition: 'started', run_id: receipt.run_id, message_id: receipt.user_message_id });
    expect(input.taken_at).not.toBeNull();
    expect((await client.getSession(session.id)).work_status).toBe('idle');

    const resumed: number[] = [];
    for await (const ev of streamRunEvents(client, receipt.run_id, { lastEventId: 3 })) resumed.push(ev.sequence);
    expect(resumed).toEqual(events.slice(3).map((e) => e.sequence));

    await expect(
      (async () => {
        for await (const ev of streamRunEvents(client, 'run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B')) void ev;
      })(),
    ).rejects.toMatchObject({ status: 404, code: 'run_not_found' });
  });
});
