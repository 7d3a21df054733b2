import { getLines, getMessages, type EventSourceMessage } from '@microsoft/fetch-event-source/lib/cjs/parse';
import { createSession, script, startRun, userInput } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * Real streams read by `@microsoft/fetch-event-source`'s parser, which (unlike WHATWG parsers)
 * hands its caller a message for every blank line, data or not: the server must send `retry:`
 * and keep-alives so that such a client sees only real events.
 */
describe('SSE read by @microsoft/fetch-event-source', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ SSE_KEEPALIVE_MS: '100' });
  });
  afterAll(async () => {
    await t?.close();
  });

  /** Reads a stream until `stop` says so (or it ends); returns the messages and retry values seen. */
  async function read(path: string, stop: (messages: EventSourceMessage[]) => boolean, ms = 15_000) {
    const res = await fetch(`${t.url}${path}`, { headers: { authorization: `Bearer ${KEYS.memberA1}`, accept: 'text/event-stream' } });
    expect(res.status).toBe(200);
    const messages: EventSourceMessage[] = [];
    const retries: number[] = [];
    const onChunk = getLines(getMessages(() => undefined, (r) => retries.push(r), (m) => messages.push({ ...m })));
    // The parser's own getBytes() loop, with a way out (aborting the fetch inside its callback hangs undici's reader).
    const reader = res.body!.getReader();
    const until = Date.now() + ms;
    try {
      while (!stop(messages) && Date.now() < until) {
        const { done, value } = await reader.read();
        if (done) break;
        onChunk(value);
      }
    } finally {
      await reader.cancel().catch(() => undefined);
    }
    return { messages, retries };
  }

  it('a run stream: every message is an event with id, type and JSON data; retry 3000 is applied', async () => {
    const session = await createSession(t, KEYS.memberA1);
    const receipt = await startRun(t, KEYS.memberA1, session, { input: userInput(script([{ text: 'hello there', chunk_size: 3 }])) });
    expect(receipt.status).toBe(202);
    const { messages, retries } = await read(`/v1/runs/${receipt.body.run_id}/events`, (m) => m.at(-1)?.event === 'run.finished');
    expect(retries).toEqual([3000]);
    expect(messages.length).toBeGreaterThan(3);
    for (const m of messages) {
      expect(m.data).not.toBe('');
      expect(JSON.parse(m.data)).toMatchObject({ type: m.event, sequence: Number(m.id) });
    }
    expect(messages[0].event).toBe('run.started');
    expect(messages.at(-1)!.event).toBe('run.finished');
  });

  it('an idle session stream (nothing to send at first, keep-alives every 100 ms) gives no empty messages', async () => {
    const session = await createSession(t, KEYS.memberA1);
    const reading = read(`/v1/sessions/${session}/events`, (m) => m.some((x) => x.event === 'run.finished'));
    // Several keep-alives go by before the first event.
    await new Promise((r) => setTimeout(r, 600));
    await startRun(t, KEYS.memberA1, session, { input: userInput('hi') });
    const { messages, retries } = await reading;
    expect(retries).toEqual([3000]);
    expect(messages.filter((m) => m.data === '')).toEqual([]);
    expect(messages[0].event).toBe('run.started');
  });
});
