import fc from 'fast-check';
import { contractOrderProblems, createSession, script, startRun, userInput } from '../helpers/runs';
import { openSse } from '../helpers/sse-client';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/** A real scripted run with a tool call, watched live over SSE, then resumed at every cursor. */
describe('run event stream over SSE', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });
  const key = KEYS.memberA1;
  const auth = { authorization: `Bearer ${key}`, accept: 'text/event-stream' };

  it('streams the run live in contract order and resumes exactly at every cursor', async () => {
    const sid = await createSession(t, key, { agent_id: 'assistant' });
    const answer = 'The weather in Oslo is fine, and this sentence is streamed in small pieces.';
    const r = await startRun(t, key, sid, {
      input: userInput(script([{ tool_calls: [{ name: 'get_weather', arguments: { location: 'Oslo' } }] }, { text: answer, chunk_size: 3, delay_ms: 5 }])),
    });
    const live = await openSse(`${t.url}${r.body.stream.url}`, { headers: auth });
    expect(live.status).toBe(200);
    expect(live.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(live.headers.get('cache-control')).toBe('no-cache');
    expect(live.headers.get('x-accel-buffering')).toBe('no');
    const frames = await live.collect('run.finished', 20000);
    await live.ended; // the server closes the stream after run.finished
    expect(live.retries[0]).toBe(3000);
    const events = frames.map((f) => f.json);
    expect(frames.map((f) => Number(f.id))).toEqual(events.map((e) => e.sequence));
    expect(frames.map((f) => f.event)).toEqual(events.map((e) => e.type));
    expect(contractOrderProblems(events)).toEqual([]);
    expect(events[0].type).toBe('run.started');
    const final = events.filter((e) => e.type === 'message.completed').pop();
    expect(final.data.content).toEqual([{ type: 'text', text: answer }]);
    // Deltas were coalesced: far fewer delta events than 3-character chunks.
    expect(events.filter((e) => e.type === 'message.delta').length).toBeLessThan(Math.ceil(answer.length / 3));

    const n = events.length;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: n - 1 }), fc.boolean(), async (cursor, viaHeader) => {
        const url = `${t.url}/v1/runs/${r.body.run_id}/events${viaHeader ? '' : `?after=${cursor}`}`;
        const headers = viaHeader ? { ...auth, 'last-event-id': String(cursor) } : auth;
        const resumed = await openSse(url, { headers });
        const got = (await resumed.collect('run.finished', 10000)).map((f) => f.json);
        expect(got).toEqual(events.slice(cursor));
      }),
      { numRuns: Math.min(40, n * 2), examples: [[0, true], [n - 1, true], [n - 1, false]] },
    );
    // Every cursor, once each, the deterministic way too.
    for (let cursor = 0; cursor < n; cursor++) {
      const resumed = await openSse(`${t.url}/v1/runs/${r.body.run_id}/events`, { headers: { ...auth, 'last-event-id': String(cursor) } });
      expect((await resumed.collect('run.finished', 10000)).map((f) => f.json.sequence)).toEqual(events.slice(cursor).map((e) => e.sequence));
    }
  });

  it('a client that reconnects in the middle of a live run misses nothing and sees nothing twice', async () => {
    const sid = await createSession(t, key);
    const text = 'x'.repeat(400);
    const r = await startRun(t, key, sid, { input: userInput(script([{ text, chunk_size: 4, delay_ms: 10 }])) });
    const first = await openSse(`${t.url}${r.body.stream.url}`, { headers: auth });
    const seen: any[] = [];
    for (let i = 0; i < 4; i++) {
      const ev = await first.next(10000);
      if (ev) seen.push(ev.json);
    }
    first.close();
    const last = seen[seen.length - 1].sequence;
    const second = await openSse(`${t.url}${r.body.stream.url}`, { headers: { ...auth, 'last-event-id': String(last) } });
    seen.push(...(await second.collect('run.finished', 20000)).map((f) => f.json));
    expect(seen.map((e) => e.sequence)).toEqual(seen.map((_, i) => i + 1));
    expect(contractOrderProblems(seen)).toEqual([]);
    const deltas = seen.filter((e) => e.type === 'message.delta').map((e) => e.data.delta).join('');
    expect(deltas).toBe(text);
  });
});

describe('streams of a deleted session', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ SSE_KEEPALIVE_MS: '1000' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('end instead of sending keep-alives forever', async () => {
    const key = KEYS.memberA1;
    const auth = { authorization: `Bearer ${key}`, accept: 'text/event-stream' };
    const sid = await createSession(t, key);
    const r = await startRun(t, key, sid, { input: userInput(script([{ sleep_ms: 20000, text: 'never' }])) });
    const runStream = await openSse(`${t.url}${r.body.stream.url}`, { headers: auth });
    const sessionStream = await openSse(`${t.url}/v1/sessions/${sid}/events`, { headers: auth });
    expect(runStream.status).toBe(200);
    await runStream.next(10000); // run.started: the stream is live
    expect((await t.call(key, 'DELETE', `/v1/sessions/${sid}`)).status).toBe(204);
    // Within 8 s; the bound's timer is cleared after (a pending one kept Jest from exiting for 8 s).
    const ended = async (s: { ended: Promise<void> }) => {
      let bound: NodeJS.Timeout | undefined;
      const result = await Promise.race([s.ended.then(() => true), new Promise((res) => (bound = setTimeout(() => res(false), 8000)))]);
      clearTimeout(bound);
      return result;
    };
    await expect(ended(runStream)).resolves.toBe(true);
    await expect(ended(sessionStream)).resolves.toBe(true);
    expect((await t.call(key, 'GET', `/v1/runs/${r.body.run_id}`)).status).toBe(404);
  });
});
