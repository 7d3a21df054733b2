import { createSession, script, startRun, userInput } from '../helpers/runs';
import { trackResources } from '../helpers/open-handles';
import { openSse } from '../helpers/sse-client';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

// Late in a full embedded run this start (or fresh migration) took over 60 s (load 8, a 2.3 GB jest
// process): the bound is 180 s; a hang still fails.
jest.setTimeout(180_000);

/**
 * The first thing a newcomer runs: the app boots (migrations, NestJS, the embedded database or
 * PostgreSQL), takes a run and streams it over SSE, and once closed leaves nothing behind that
 * would keep Jest (or any process embedding it) from exiting.
 */
describe('smoke', () => {
  let t: TestApp;
  const resources = trackResources();
  beforeAll(async () => {
    resources.enable();
    t = await startTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('creates and reads a session', async () => {
    const created = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', { title: 'x' });
    expect(created.status).toBe(201);
    const got = await t.call(KEYS.memberA1, 'GET', `/v1/sessions/${created.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body.title).toBe('x');
  });

  it('streams a run over SSE from run.started to run.finished, the text in order', async () => {
    const sessionId = await createSession(t, KEYS.memberA1);
    const text = 'The smoke test streams this answer in small chunks.';
    const run = await startRun(t, KEYS.memberA1, sessionId, { input: userInput(script([{ text, chunk_size: 10, delay_ms: 40 }])) });
    expect(run.status).toBe(202);
    const stream = await openSse(`${t.url}/v1/runs/${run.body.run_id}/events`, { headers: { authorization: `Bearer ${KEYS.memberA1}` } });
    try {
      expect(stream.status).toBe(200);
      expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const events = await stream.collect('run.finished', 60_000);
      const types = events.map((e) => e.event);
      expect(types[0]).toBe('run.started');
      expect(types[types.length - 1]).toBe('run.finished');
      expect(events[events.length - 1].json.data).toMatchObject({ status: 'completed' });
      const deltas = events.filter((e) => e.event === 'message.delta');
      expect(deltas.length).toBeGreaterThan(1);
      expect(deltas.map((e) => e.json.data.delta).join('')).toBe(text);
      // SSE ids are the run's sequence numbers: 1, 2, 3, ... without gaps.
      expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1));
      expect(events.every((e) => e.json.run_id === run.body.run_id)).toBe(true);
    } finally {
      stream.close();
    }
    const done = await t.call(KEYS.memberA1, 'GET', `/v1/runs/${run.body.run_id}`);
    expect(done.body.status).toBe('completed');
  });

  it('leaves no timer, socket or server behind once closed (Jest exits on its own)', async () => {
    await t.close();
    t = undefined as unknown as TestApp;
    await new Promise((r) => setTimeout(r, 100));
    expect(resources.alive()).toEqual([]);
  });
});
