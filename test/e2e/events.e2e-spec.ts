import fc from 'fast-check';
import { UnitOfWork } from '../../src/common/database/unit-of-work';
import { EventRetentionSweeper } from '../../src/modules/events/application/event-retention-sweeper';
import { StreamHub } from '../../src/modules/events/application/stream-hub';
import { EventStreamOwner, NewRunEvent } from '../../src/modules/events/domain/run-event';
import { append, createSession, deltas, FINISHED, insertRun, NO_WORKER, setRunStatus } from '../helpers/event-fixtures';
import { openSse, SseStream } from '../helpers/sse-client';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

jest.setTimeout(60_000);

const auth = (key: string) => ({ authorization: `Bearer ${key}` });
const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);

async function waitUntil(cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('events API', () => {
  let t: TestApp;
  const streams: SseStream[] = [];
  const sse = async (path: string, key: string, headers: Record<string, string> = {}) => {
    const s = await openSse(t.url + path, { headers: { ...auth(key), ...headers } });
    streams.push(s);
    return s;
  };

  beforeAll(async () => {
    t = await startTestApp({ ...NO_WORKER, SSE_KEEPALIVE_MS: '150' });
  });
  afterEach(() => {
    for (const s of streams.splice(0)) s.close();
  });
  afterAll(async () => {
    await t.close();
  });

  describe('JSON pages', () => {
    let run: EventStreamOwner;
    beforeAll(async () => {
      const session = await createSession(t, KEYS.memberA1);
      run = await insertRun(t, session);
      await append(t, run, [{ type: 'run.started', data: { status: 'running' } }, ...deltas(24)]);
    });

    it('pages with after and limit; last_sequence is the stream end', async () => {
      const first = await t.call(KEYS.memberA1, 'GET', `/v1/runs/${run.runId}/events?limit=10`);
      expect(first.status).toBe(200);
      expect(first.headers.get('content-type')).toMatch(/application\/json/);
      expect(first.headers.get('vary')).toBe('Accept');
      expect(first.body).toMatchObject({ object: 'list', has_more: true, last_sequence: 25 });
      expect(first.body.data.map((e: any) => e.sequence)).toEqual(range(1, 10));
      expect(first.body.data[0]).toEqual({
        event_id: expect.stringMatching(/^evt_/),
        run_id: run.runId,
        session_id: run.sessionId,
        sequence: 1,
        session_sequence: 1,
        type: 'run.started',
        occurred_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        data: { status: 'running' },
      });
      const last = await t.call(KEYS.memberA1, 'GET', `/v1/runs/${run.runId}/events?after=20&limit=10`);
      expect(last.body.data.map((e: any) => e.sequence)).toEqual(range(21, 25));
      expect(last.body.has_more).toBe(false);
      const exact = await t.call(KEYS.memberA1, 'GET', `/v1/runs/${run.runId}/events?after=15&limit=10`);
      expect(exact.body.data.map((e: any) => e.sequence)).toEqual(range(16, 25));
      expect(exact.body.has_more).toBe(false);
      const session = await t.call(KEYS.memberA1, 'GET', `/v1/sessions/${run.sessionId}/events?after=3&limit=2`);
      expect(session.body.data.map((e: any) => e.session_sequence)).toEqual([4, 5]);
      expect(session.body).toMatchObject({ has_more: true, last_sequence: 25 });
    });

    it.each(['-1', 'abc', '1.5', '1e3', '99999999999999999999'])('after=%s is 400 invalid_cursor', async (after) => {
      const res = await t.call(KEYS.memberA1, 'GET', `/v1/runs/${run.runId}/events?after=${encodeURIComponent(after)}`);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_cursor');
      expect(res.headers.get('x-request-id')).toBeTruthy();
    });

    it.each(['0', '1001', 'x'])('limit=%s is 400 invalid_request', async (limit) => {
      const res = await t.call(KEYS.memberA1, 'GET', `/v1/runs/${run.runId}/events?limit=${limit}`);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    });

    it('a bad Last-Event-ID on SSE is 400 invalid_cursor as JSON, not a stream', async () => {
      const s = await sse(`/v1/runs/${run.runId}/events`, KEYS.memberA1, { 'last-event-id': 'nope' });
      expect(s.status).toBe(400);
      expect(s.errorBody.error.code).toBe('invalid_cursor');
    });

    it('foreign and unknown runs and sessions are 404 (JSON and SSE); no key is 401', async () => {
      for (const key of [KEYS.memberA2, KEYS.adminB, KEYS.memberB]) {
        const res = await t.call(key, 'GET', `/v1/runs/${run.runId}/events`);
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe('run_not_found');
        const s = await sse(`/v1/runs/${run.runId}/events`, key);
        expect(s.status).toBe(404);
        expect(s.headers.get('content-type')).toMatch(/application\/json/);
        expect(s.errorBody.error.code).toBe('run_not_found');
        const sess = await t.call(key, 'GET', `/v1/sessions/${run.sessionId}/events`);
        expect(sess.status).toBe(404);
        expect(sess.body.error.code).toBe('session_not_found');
      }
      const unknown = await t.call(KEYS.adminA, 'GET', `/v1/runs/run_01JD2Z4Q8M3K7P6W9X0Y1Z2A3B/events`);
      expect(unknown.status).toBe(404);
      expect(unknown.body.error.code).toBe('run_not_found');
      const anon = await t.call(null, 'GET', `/v1/runs/${run.runId}/events`);
      expect(anon.status).toBe(401);
      // The tenant's admin sees the member's run.
      await expect(t.call(KEYS.adminA, 'GET', `/v1/runs/${run.runId}/events`)).resolves.toMatchObject({ status: 200 });
    });

    it.each([
      ['text/event-stream;q=0, application/json', 'json'],
      ['application/json, text/event-stream;q=0.5', 'json'],
      ['text/event-stream;q=0.5, */*', 'json'],
      ['*/*', 'json'],
      ['text/*', 'json'],
      ['application/json;q=0.5, text/event-stream', 'sse'],
      ['text/event-stream, application/json', 'sse'],
      ['text/event-stream;q=0.2, text/html', 'sse'],
    ])('Accept %j negotiates %s by q-value (run and session streams)', async (accept, expected) => {
      for (const path of [`/v1/runs/${run.runId}/events?limit=5`, `/v1/sessions/${run.sessionId}/events?limit=5`]) {
        const s = await sse(path, KEYS.memberA1, { accept });
        expect(s.status).toBe(200);
        if (expected === 'sse') {
          expect(s.headers.get('content-type')).toMatch(/^text\/event-stream/);
          expect((await s.next())?.id).toBe('1');
          s.close();
        } else {
          expect(s.headers.get('content-type')).toMatch(/^application\/json/);
          expect(s.errorBody).toMatchObject({ object: 'list', has_more: true });
          expect(s.errorBody.data.map((e: any) => e.sequence)).toEqual(range(1, 5));
        }
      }
    });
  });

  describe('SSE run stream', () => {
    it('replays, goes live, and closes after run.finished; frames, headers, retry and keep-alive', async () => {
      const session = await createSession(t, KEYS.memberA1);
      const run = await insertRun(t, session);
      await append(t, run, [{ type: 'run.started', data: { status: 'running' } }, ...deltas(2)]);
      const s = await sse(`/v1/runs/${run.runId}/events`, KEYS.memberA1, { 'x-request-id': 'sse-test-1' });
      expect(s.status).toBe(200);
      expect(s.headers.get('content-type')).toBe('text/event-stream');
      expect(s.headers.get('cache-control')).toBe('no-cache');
      expect(s.headers.get('x-accel-buffering')).toBe('no');
      expect(s.headers.get('vary')).toBe('Accept');
      expect(s.headers.get('x-request-id')).toBe('sse-test-1');
      const replayed = [await s.next(), await s.next(), await s.next()];
      expect(replayed.map((e) => [e!.id, e!.event])).toEqual([
        ['1', 'run.started'],
        ['2', 'message.delta'],
        ['3', 'message.delta'],
      ]);
      expect(replayed[1]!.json).toMatchObject({ run_id: run.runId, sequence: 2, session_sequence: 2, type: 'message.delta', data: { delta: 'd0' } });
      expect(s.retries).toEqual([3000]);
      // Idle: keep-alive comments, no events.
      await waitUntil(() => s.comments.filter((c) => c === 'keep-alive').length >= 2);
      // Live.
      await append(t, run, deltas(2));
      await append(t, run, [{ type: 'usage', data: { input_tokens: 1, output_tokens: 1, cached_input_tokens: 0, model_calls: 1, tool_calls: 0 } }, FINISHED]);
      const live = await s.collect('run.finished');
      expect(live.map((e) => Number(e.id))).toEqual([4, 5, 6, 7]);
      expect(live.at(-1)!.event).toBe('run.finished');
      await s.ended;
      await expect(s.next()).resolves.toBeNull();
      await waitUntil(() => t.app.get(StreamHub).stats().subscribers === 0);
    });

    it('resumes at EVERY cursor position with exactly the remaining events (Last-Event-ID wins over ?after)', async () => {
      const session = await createSession(t, KEYS.memberA1);
      const run = await insertRun(t, session);
      const events: NewRunEvent[] = [{ type: 'run.started', data: { status: 'running' } }, ...deltas(8), FINISHED];
      const n = events.length;
      await append(t, run, events.slice(0, 4));
      await append(t, run, events.slice(4));
      await setRunStatus(t, run.runId, 'completed');
      const readFrom = async (header: number | null, after: number | null) => {
        const q = after === null ? '' : `?after=${after}`;
        const s = await sse(`/v1/runs/${run.runId}/events${q}`, KEYS.memberA1, header === null ? {} : { 'last-event-id': String(header) });
        if (s.status === 204) return { status: 204, ids: [] as number[] };
        const got = await s.collect('run.finished');
        await s.ended;
        return { status: s.status, ids: got.map((e) => Number(e.id)) };
      };
      for (let c = 0; c <= n; c++) {
        const expected = c === n ? { status: 204, ids: [] } : { status: 200, ids: range(c + 1, n) };
        await expect(readFrom(c, null)).resolves.toEqual(expected);
        await expect(readFrom(null, c)).resolves.toEqual(expected);
      }
      await fc.assert(
        fc.asyncProperty(fc.option(fc.integer({ min: 0, max: n }), { nil: null }), fc.option(fc.integer({ min: 0, max: n }), { nil: null }), async (header, after) => {
          const cursor = header ?? after ?? 0;
          const got = await readFrom(header, after);
          expect(got.ids).toEqual(range(cursor + 1, n));
          expect(got.status).toBe(cursor === n ? 204 : 200);
        }),
        { numRuns: 40 },
      );
    });

    it('delivers every event exactly once while appends race with the replay (no gap, no duplicate at the seam)', async () => {
      const session = await createSession(t, KEYS.memberA1);
      const run = await insertRun(t, session);
      await append(t, run, deltas(30));
      const writer = (async () => {
        for (let i = 0; i < 20; i++) await append(t, run, deltas(1 + (i % 3)));
        await append(t, run, [FINISHED]);
      })();
      const readers = await Promise.all([0, 5, 17, 29].map((c) => sse(`/v1/runs/${run.runId}/events?after=${c}`, KEYS.memberA1)));
      await writer;
      const total = 30 + Array.from({ length: 20 }, (_, i) => 1 + (i % 3)).reduce((a, b) => a + b, 0) + 1;
      const results = await Promise.all(readers.map((s) => s.collect('run.finished', 15_000)));
      expect(results.map((r) => r.map((e) => Number(e.id)))).toEqual([0, 5, 17, 29].map((c) => range(c + 1, total)));
    });
  });

  describe('SSE session stream', () => {
    it('spans runs gap-free by session_sequence and stays open after run.finished', async () => {
      const session = await createSession(t, KEYS.memberA1);
      const run1 = await insertRun(t, session);
      await append(t, run1, [{ type: 'run.started', data: { status: 'running' } }, ...deltas(3)]);
      const s = await sse(`/v1/sessions/${session.id}/events`, KEYS.memberA1);
      expect(s.status).toBe(200);
      await append(t, run1, [FINISHED]);
      const run2 = await insertRun(t, session);
      await append(t, run2, [{ type: 'run.started', data: { status: 'running' } }, ...deltas(2)]);
      await append(t, run2, [FINISHED]);
      const got = [];
      for (let i = 0; i < 9; i++) got.push((await s.next())!);
      expect(got.map((e) => Number(e.id))).toEqual(range(1, 9));
      expect(got.map((e) => e.json.session_sequence)).toEqual(range(1, 9));
      expect(got.map((e) => [e.json.run_id, e.json.sequence])).toEqual([
        ...range(1, 5).map((q) => [run1.runId, q]),
        ...range(1, 4).map((q) => [run2.runId, q]),
      ]);
      // Still open: a third run's events arrive on the same stream.
      const run3 = await insertRun(t, session);
      await append(t, run3, [{ type: 'run.started', data: { status: 'running' } }]);
      await expect(s.next()).resolves.toMatchObject({ id: '10', event: 'run.started' });
      // Resume in the middle with Last-Event-ID.
      const resumed = await sse(`/v1/sessions/${session.id}/events`, KEYS.memberA1, { 'last-event-id': '6' });
      const rest = [];
      for (let i = 0; i < 4; i++) rest.push(Number((await resumed.next())!.id));
      expect(rest).toEqual([7, 8, 9, 10]);
    });
  });

  describe('projection', () => {
    const lookup: NewRunEvent[] = [
      { type: 'tool.requested', data: { tool_call_id: 'call_1', tool_name: 'lookup_customer', arguments: { email: 'ann@example.com' }, risk: 'auto' } },
      { type: 'tool.completed', data: { tool_call_id: 'call_1', tool_name: 'lookup_customer', result: { name: 'Ann' }, duration_ms: 3 } },
      { type: 'tool.requested', data: { tool_call_id: 'call_2', tool_name: 'get_order', arguments: { order_id: 'O-1001', api_key: 'k' }, risk: 'auto' } },
      {
        type: 'message.completed',
        data: {
          message_id: 'msg_1',
          content: [
            { type: 'tool_call', tool_call_id: 'call_1', tool_name: 'lookup_customer', arguments: { email: 'ann@example.com' } },
            { type: 'tool_result', tool_call_id: 'call_1', tool_name: 'lookup_customer', ok: true, result: { name: 'Ann' } },
          ],
        },
      },
    ];

    it('members get the public projection, admins the full events (JSON and SSE)', async () => {
      const session = await createSession(t, KEYS.memberA1);
      const run = await insertRun(t, session);
      await append(t, run, lookup);
      const member = await t.call(KEYS.memberA1, 'GET', `/v1/runs/${run.runId}/events`);
      const admin = await t.call(KEYS.adminA, 'GET', `/v1/runs/${run.runId}/events`);
      expect(admin.body.data.map((e: any) => e.data)).toEqual(lookup.map((e) => e.data));
      expect(member.body.data.map((e: any) => e.data)).toEqual([
        { tool_call_id: 'call_1', tool_name: 'lookup_customer', arguments: { redacted: true }, risk: 'auto' },
        { tool_call_id: 'call_1', tool_name: 'lookup_customer', result: { redacted: true }, duration_ms: 3 },
        { tool_call_id: 'call_2', tool_name: 'get_order', arguments: { order_id: 'O-1001', api_key: '***' }, risk: 'auto' },
        {
          message_id: 'msg_1',
          content: [
            { type: 'tool_call', tool_call_id: 'call_1', tool_name: 'lookup_customer', arguments: { redacted: true } },
            { type: 'tool_result', tool_call_id: 'call_1', tool_name: 'lookup_customer', ok: true, result: { redacted: true } },
          ],
        },
      ]);
      // Same projection over SSE; sequences untouched (redacts, never drops).
      const ms = await sse(`/v1/runs/${run.runId}/events`, KEYS.memberA1);
      const as = await sse(`/v1/runs/${run.runId}/events`, KEYS.adminA);
      const mEvents = [];
      const aEvents = [];
      for (let i = 0; i < 4; i++) {
        mEvents.push((await ms.next())!.json);
        aEvents.push((await as.next())!.json);
      }
      expect(mEvents).toEqual(member.body.data);
      expect(aEvents).toEqual(admin.body.data);
    });
  });

  it('documents both content types and the resume headers in OpenAPI', async () => {
    const doc = await t.call(null, 'GET', '/docs-json');
    expect(doc.status).toBe(200);
    for (const path of ['/v1/runs/{id}/events', '/v1/sessions/{id}/events']) {
      const op = doc.body.paths[path].get;
      expect(Object.keys(op.responses['200'].content).sort()).toEqual(['application/json', 'text/event-stream']);
      // One frame's `data:` is a RunEvent (the discriminated union); the wire text is in the description.
      expect(op.responses['200'].content['text/event-stream'].schema).toEqual({ $ref: '#/components/schemas/RunEvent' });
      expect(op.responses['200'].description).toContain('retry: 3000\nid: 1\nevent: run.started\ndata: {');
      expect(op.parameters.map((p: any) => p.name)).toEqual(expect.arrayContaining(['Last-Event-ID', 'after', 'limit']));
      // OpenAPI 3 ignores a header parameter named Accept: negotiation is documented in the description.
      expect(op.parameters.map((p: any) => p.name)).not.toContain('Accept');
      expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['400', '401', '404', '410', '429']));
    }
  });

  describe('retention', () => {
    const HOUR = 3_600_000;
    /** The partitions (tables) holding a run's events. */
    const partitionsOf = async (runId: string): Promise<string[]> =>
      (await t.app.get(UnitOfWork).manager.query(`SELECT DISTINCT tableoid::regclass::text AS p FROM run_events WHERE run_id = $1`, [runId])).map((r: { p: string }) => r.p);

    it('rows written past the last partition land in the default one and move into the partition made for their time', async () => {
      const session = await createSession(t, KEYS.memberA1);
      const run = await insertRun(t, session, 'completed');
      await append(t, run, [{ type: 'run.started', data: { status: 'running' } }, FINISHED]);
      const uow = t.app.get(UnitOfWork);
      await uow.manager.query(`UPDATE run_events SET occurred_at = occurred_at + interval '100 days' WHERE run_id = $1`, [run.runId]);
      expect(await partitionsOf(run.runId)).toEqual(['run_events_default']);
      await expect(t.app.get(EventRetentionSweeper).ensurePartitions(new Date(Date.now() + 100 * 24 * HOUR))).resolves.toBeGreaterThan(0);
      const [moved] = await partitionsOf(run.runId);
      expect(moved).toMatch(/^run_events_p\d{8}$/);
      const [{ n }] = await uow.manager.query(`SELECT count(*)::int AS n FROM run_events_default`);
      expect(n).toBe(0);
      const res = await t.call(KEYS.memberA1, 'GET', `/v1/runs/${run.runId}/events`);
      expect(res.body.data.map((e: any) => e.sequence)).toEqual([1, 2]);
    });

    it('retention drops a whole partition once its runs finished: older cursors are 410 cursor_expired, later ones still work', async () => {
      const sweeper = t.app.get(EventRetentionSweeper);
      // Partitions well past the times used below (also made at start-up, two periods ahead).
      await sweeper.ensurePartitions(new Date(Date.now() + 30 * 24 * HOUR));
      const session = await createSession(t, KEYS.memberA1);
      const old = await insertRun(t, session, 'completed');
      await append(t, old, [{ type: 'run.started', data: { status: 'running' } }, ...deltas(3), FINISHED]);
      const active = await insertRun(t, session);
      await append(t, active, [{ type: 'run.started', data: { status: 'running' } }]);
      // Where the partition boundaries fall depends on the day the database was made (the embedded
      // template is cached across days), so the test places its runs by the boundaries themselves:
      // the finished run alone in the partition after the one holding "now" (with other tests'
      // unfinished runs), the active run in the partition after that.
      const uow = t.app.get(UnitOfWork);
      const partitions = async (): Promise<Array<{ name: string; upper: Date }>> =>
        (await uow.manager.query(`SELECT name, upper FROM run_events_partition_bounds() ORDER BY upper`)).map((r: { name: string; upper: string | Date }) => ({ name: r.name, upper: new Date(r.upper) }));
      const bounds = async () => (await partitions()).map((p) => p.name);
      const nowPartition = (await partitions()).find((p) => p.upper.getTime() > Date.now())!;
      const place = (runId: string, at: Date) => uow.manager.query(`UPDATE run_events SET occurred_at = $2 WHERE run_id = $1`, [runId, at]);
      await place(old.runId, new Date(nowPartition.upper.getTime() + HOUR));
      const [oldName] = await partitionsOf(old.runId);
      const oldPartition = (await partitions()).find((p) => p.name === oldName)!;
      expect(oldPartition).toBeDefined();
      await place(active.runId, new Date(oldPartition.upper.getTime() + HOUR));
      const [activeName] = await partitionsOf(active.runId);
      expect(activeName).toMatch(/^run_events_p\d{8}$/);
      expect(activeName).not.toBe(oldName);
      // With 30 days of retention, a sweep 30 days after the finished run's partition ends: that
      // partition is past the cutoff, the active run's is not (and it is not finished anyway).
      await expect(sweeper.sweep(new Date(oldPartition.upper.getTime() + 30 * 24 * HOUR))).resolves.toBe(5);
      expect(await bounds()).not.toContain(oldName);
      expect(await bounds()).toContain(activeName);
      expect(await partitionsOf(old.runId)).toEqual([]);
      expect(await partitionsOf(active.runId)).toEqual([activeName]);

      for (const path of [`/v1/runs/${old.runId}/events?after=0`, `/v1/runs/${old.runId}/events?after=4`, `/v1/sessions/${session.id}/events`]) {
        const res = await t.call(KEYS.memberA1, 'GET', path);
        expect(res.status).toBe(410);
        expect(res.body.error.code).toBe('cursor_expired');
      }
      const sseExpired = await sse(`/v1/sessions/${session.id}/events`, KEYS.memberA1, { 'last-event-id': '2' });
      expect(sseExpired.status).toBe(410);
      // The active run (old events, but not finished) is kept.
      const kept = await t.call(KEYS.memberA1, 'GET', `/v1/sessions/${session.id}/events?after=5`);
      expect(kept.status).toBe(200);
      expect(kept.body.data.map((e: any) => [e.run_id, e.session_sequence])).toEqual([[active.runId, 6]]);
      const done = await sse(`/v1/runs/${old.runId}/events`, KEYS.memberA1, { 'last-event-id': '5' });
      expect(done.status).toBe(204);
    });
  });
});

describe('events API: per-key stream limit and shutdown', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ ...NO_WORKER, SSE_MAX_PER_KEY: '2' });
  });
  afterAll(async () => {
    await t.close().catch(() => undefined);
  });

  it('the stream over SSE_MAX_PER_KEY is 429 rate_limited with Retry-After; closing one frees a slot', async () => {
    const session = await createSession(t, KEYS.memberA1);
    const url = `${t.url}/v1/sessions/${session.id}/events`;
    const a = await openSse(url, { headers: auth(KEYS.memberA1) });
    const b = await openSse(url, { headers: auth(KEYS.memberA1) });
    expect([a.status, b.status]).toEqual([200, 200]);
    const c = await openSse(url, { headers: auth(KEYS.memberA1) });
    expect(c.status).toBe(429);
    expect(c.errorBody.error.code).toBe('rate_limited');
    expect(Number(c.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another key of the same tenant is not affected; JSON reads are not streams.
    const other = await openSse(url, { headers: auth(KEYS.adminA) });
    expect(other.status).toBe(200);
    await expect(t.call(KEYS.memberA1, 'GET', `/v1/sessions/${session.id}/events`)).resolves.toMatchObject({ status: 200 });
    a.close();
    other.close();
    let d: SseStream | null = null;
    const deadline = Date.now() + 5000;
    while (!d || d.status !== 200) {
      if (Date.now() > deadline) throw new Error('slot not released');
      d = await openSse(url, { headers: auth(KEYS.memberA1) });
      if (d.status !== 200) await new Promise((r) => setTimeout(r, 20));
    }
    b.close();
    d.close();
  });

  it('app shutdown ends open streams cleanly', async () => {
    const session = await createSession(t, KEYS.memberA1);
    const run = await insertRun(t, session);
    await append(t, run, deltas(1));
    const s = await openSse(`${t.url}/v1/sessions/${session.id}/events`, { headers: auth(KEYS.memberA1) });
    await expect(s.next()).resolves.toMatchObject({ id: '1' });
    const closing = t.close();
    await s.ended;
    await closing;
    await expect(s.next()).resolves.toBeNull();
  });
});
